package exercises

import (
	"slices"
	"strings"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/internal/i18n"
)

// availability says why this lab cannot run ex ("" when it can), in
// English for errors and logs; unavailable says it in both languages for
// the page.
func (s *Service) availability(ex *format.Exercise) string { return s.unavailable(ex).EN }

func (s *Service) unavailable(ex *format.Exercise) i18n.Text {
	p := s.cfg.Env.Profile.Name
	if len(ex.Setup.Profiles) > 0 && !slices.Contains(ex.Setup.Profiles, p) {
		list := strings.Join(ex.Setup.Profiles, ", ")
		return i18n.Textf("%[1]s プロファイルが必要です (このラボは %[2]s で動いています)", "needs the %[1]s profile (this lab runs %[2]s)", list, p)
	}
	status := s.cfg.Env.Controllers.Status()
	for _, c := range ex.Setup.Requires {
		if _, ok := status[c]; !ok {
			if c == "lbc" {
				return i18n.Text{JA: "lbc アドオンが必要です (ラボを --addons lbc で起動してください)", EN: "needs the lbc add-on (start the lab with --addons lbc)"}
			}
			return i18n.Textf("%[1]s controller が必要ですが、%[2]s プロファイルにはありません", "needs a %[1]s controller, which the %[2]s profile does not have", c, p)
		}
	}
	return i18n.Text{}
}

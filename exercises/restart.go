package exercises

import (
	"slices"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/internal/labapi"
	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// Restart is the lab an unavailable exercise would run in (labapi).
type Restart = labapi.Restart

// restartFor says how this lab would have to restart for ex to run, or
// nil when it runs already, when the lab cannot restart itself
// (Config.Restartable), or when no profile has what ex needs.
func (s *Service) restartFor(ex *format.Exercise) *Restart {
	if !s.cfg.Restartable || s.availability(ex) == "" {
		return nil
	}
	status := s.cfg.Env.Controllers.Status()
	var addons []string // installed now, kept
	if _, ok := status[ccmnames.AddonLBC]; ok {
		addons = append(addons, ccmnames.AddonLBC)
	}
	var controllers []string // what the profile must have
	for _, r := range ex.Setup.Requires {
		if r == ccmnames.AddonLBC {
			if !slices.Contains(addons, r) {
				addons = append(addons, r)
			}
			continue
		}
		controllers = append(controllers, r)
	}
	// The lab's own profile first, so only what is missing changes; then
	// the exercise's profiles in its order, then every other.
	current := s.cfg.Env.Profile.Name
	candidates := []string{current}
	if len(ex.Setup.Profiles) > 0 {
		candidates = slices.Clone(ex.Setup.Profiles)
		if slices.Contains(ex.Setup.Profiles, current) {
			candidates = append([]string{current}, candidates...)
		}
	} else {
		candidates = append(candidates, profile.Names()...)
	}
	for _, name := range candidates {
		p, err := profile.Get(name)
		if err != nil {
			continue
		}
		if !slices.ContainsFunc(controllers, func(c string) bool { return !p.Has(c) }) {
			return &Restart{Profile: name, Addons: nonNilStrings(addons)}
		}
	}
	return nil
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

package i18n

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	japaneseScript = regexp.MustCompile(`[\p{Hiragana}\p{Katakana}\p{Han}]`)
	// Two English words in a row make an English phrase: the thing a
	// Japanese page must not show. Single words (EnsuringLoadBalancer,
	// NodePort, kubectl) are the names students read in real output.
	englishPhrase = regexp.MustCompile(`\b[A-Za-z]{2,}\s+[a-z]{2,}\b`)
)

// KeptNames are the English names of several words that Japanese texts
// keep as they are, because that is how students meet them in Kubernetes
// output and documentation.
var KeptNames = []string{
	"uninitialized taint", "Service controller", "Node controller", "Route controller",
	"load-balancer-controller", "health check",
}

// NotJapanese says why ja is not a Japanese sentence, or "" when it is:
// it must contain Japanese script, and besides its {placeholders} and
// KeptNames (plus any names given) no English phrase. The catalogs' tests
// and the page's test share this one rule.
func NotJapanese(ja string, names ...string) string {
	if !japaneseScript.MatchString(ja) {
		return "no Japanese in it"
	}
	rest := placeholder.ReplaceAllString(ja, "X")
	for _, n := range append(append([]string(nil), KeptNames...), names...) {
		rest = strings.ReplaceAll(rest, n, "X")
	}
	if p := englishPhrase.FindString(rest); p != "" {
		return "the English phrase " + strconv.Quote(p)
	}
	return ""
}

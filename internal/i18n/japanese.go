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
	"load-balancer-controller", "health check", "AWS Load Balancer Controller",
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

var (
	// asciiRun is a stretch of text without Japanese script: where an
	// English sentence could hide inside a Japanese text.
	asciiRun = regexp.MustCompile(`[\x00-\x7f]+`)
	// plainWord is how an English word looks: letters only, at most the
	// first one upper-case. Names (NodePort, EXTERNAL-IP, providerID,
	// node.kubernetes.io/zone, i-0abc) do not look like that.
	plainWord = regexp.MustCompile(`^[A-Za-z][a-z]*$`)
	// commandStart begins a command line quoted in a text, which runs to
	// the end of its ASCII stretch.
	commandStart = regexp.MustCompile(`\b(kubectl|curl|jq|ccmlab|aws|sudo|echo) `)
	// quoted is what a Japanese text quotes in 「」, backquotes or double
	// quotes.
	quoted = regexp.MustCompile("「[^」]*」|`[^`]*`|\"[^\"]*\"")
)

// EnglishSentence returns the first English sentence in a Japanese text,
// or "" when there is none. An English sentence is a run of three or more
// plain English words (see plainWord) in a row; commands (from kubectl,
// curl, ... to the end of their ASCII stretch), quotes (「…」, `…`: log
// lines and errors as printed), names with capitals inside, dots, dashes
// or digits, and the KeptNames plus names given are not words; an opening
// bracket or punctuation after a word ends a run. Two words may stand together ("Service controller"), three
// are a phrase a Japanese reader should have had in Japanese.
func EnglishSentence(ja string, names ...string) string {
	rest := placeholder.ReplaceAllString(ja, "X")
	// What a text quotes (a log line, an error) is as the program printed it.
	rest = quoted.ReplaceAllString(rest, " X ")
	for _, n := range append(append([]string(nil), KeptNames...), names...) {
		rest = strings.ReplaceAll(rest, n, " X ")
	}
	for _, run := range asciiRun.FindAllString(rest, -1) {
		if loc := commandStart.FindStringIndex(run); loc != nil {
			run = run[:loc[0]]
		}
		n := 0 // plain words in a row
		var words []string
		for _, tok := range strings.Fields(run) {
			w := strings.Trim(tok, `,.;:!?()"'`)
			if !plainWord.MatchString(w) || len(w) < 2 {
				n, words = 0, words[:0]
				continue
			}
			if strings.ContainsAny(tok[:1], `("'`) {
				n, words = 0, words[:0] // an opening bracket starts a new phrase
			}
			n++
			words = append(words, w)
			if n >= 3 {
				return strings.Join(words, " ")
			}
			// Punctuation after a word ends the phrase ("svc, そして").
			if strings.ContainsAny(tok[len(tok)-1:], `,.;:!?)"`) {
				n, words = 0, words[:0]
			}
		}
	}
	return ""
}

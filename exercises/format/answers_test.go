package format

import (
	"regexp"
	"strings"
	"testing"
)

// TestTextsKeepTheirAnswers: no goal, setup or step text of an exercise
// states the right answer of one of its own quiz questions, so that the
// quiz asks for what the steps showed, not for what was read. A right
// choice's distinctive words are those neither its question nor any wrong
// choice uses (the words that make it right), of the whole choice and of
// its head before a comma; a sentence of the
// exercise's texts that holds all of them gives the answer away. English
// texts are scanned: every exercise has the same sentences in both
// languages (TestBothLanguagesComplete), and English splits into words.
func TestTextsKeepTheirAnswers(t *testing.T) {
	all, err := LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range all {
		var texts []string
		texts = append(texts, ex.Goal.EN, ex.Setup.About.EN)
		for _, s := range ex.Steps {
			texts = append(texts, s.Title.EN, s.Body.EN)
		}
		var sentences []string
		for _, tx := range texts {
			sentences = append(sentences, sentenceSplit.Split(tx, -1)...)
		}
		for _, q := range ex.Quiz {
			common := words(q.Question.EN)
			var right []string
			for _, c := range q.Choices {
				if c.Correct {
					right = append(right, c.Text.EN)
					continue
				}
				for w := range words(c.Text.EN) {
					common[w] = true
				}
			}
			// A right choice qualified after a comma ("The CCM's Node
			// controller, from the cloud's answer") is given away by its
			// head as well.
			for _, r := range right {
				if i := strings.IndexAny(r, ",;"); i > 0 {
					right = append(right, r[:i])
				}
			}
			for _, r := range right {
				var distinct []string
				for w := range words(r) {
					if !common[w] {
						distinct = append(distinct, w)
					}
				}
				if len(distinct) == 0 {
					continue
				}
				for _, s := range sentences {
					have := words(s)
					all := true
					for _, w := range distinct {
						all = all && have[w]
					}
					if all {
						t.Errorf("%s: quiz %s's answer %q (its words %q) is stated in %q", ex.ID, q.ID, r, distinct, strings.TrimSpace(s))
					}
				}
			}
		}
	}
}

var (
	sentenceSplit = regexp.MustCompile(`[.;:!?]\s+|\n`)
	wordRE        = regexp.MustCompile(`[a-z0-9][a-z0-9./_-]*[a-z0-9]|[a-z0-9]`)
	stop          = map[string]bool{}
)

func init() {
	for _, w := range strings.Fields(`a an the and or but of to in on at by for from with without into onto is are was were be been being it its this that these those there their them they as not no
		do does did done has have had can cannot could will would should may might must so than then when what which who whom whose while where why how all any each every one two some
		only just also still yet more most less least same other another own up out off over under again once new old you your we our us i if`) {
		stop[w] = true
	}
}

// words is the set of a text's lower-case words, common words left out.
func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range wordRE.FindAllString(strings.ToLower(s), -1) {
		w = strings.TrimRight(w, ".")
		if !stop[w] && len(w) > 1 {
			out[w] = true
		}
	}
	return out
}

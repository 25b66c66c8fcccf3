package exercises

import (
	"fmt"

	"github.com/ccmlab/ccmlab/exercises/format"
)

// normLang is the language a request asks for: en when it names none,
// ErrBadInput for one the exercises are not written in.
func normLang(lang string) (string, error) {
	switch lang {
	case "", format.LangEN:
		return format.LangEN, nil
	case format.LangJA:
		return format.LangJA, nil
	}
	return "", fmt.Errorf("%w: language %q (valid: ja, en)", ErrBadInput, lang)
}

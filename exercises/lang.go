package exercises

import (
	"errors"
	"fmt"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/internal/i18n"
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

// textError is an error the API answers in the request's language: Err
// is the sentinel (ErrNotCurrent, ...) errors.Is finds, Text what it says
// in each language.
type textError struct {
	err  error
	text i18n.Text
}

func (e *textError) Error() string { return e.err.Error() + ": " + e.text.EN }
func (e *textError) Unwrap() error { return e.err }

// errText wraps sentinel with what happened, in both languages.
func errText(sentinel error, ja, en string) error {
	return &textError{err: sentinel, text: i18n.Text{JA: ja, EN: en}}
}

// sentinelJA says each sentinel in Japanese, for an error that carries
// no Japanese text of its own.
var sentinelJA = map[error]string{
	ErrNotFound:    "見つかりません",
	ErrBadInput:    "入力が正しくありません",
	ErrUnavailable: "このラボではこの演習を使えません",
	ErrNotCurrent:  "いまのステップではありません",
}

// ErrorText is err as the API says it in lang ("ja" or anything else for
// English): its own Japanese text when it has one, else the kind of
// error in Japanese with the English detail after it.
func ErrorText(err error, lang string) string {
	if lang != format.LangJA {
		return err.Error()
	}
	var te *textError
	if errors.As(err, &te) {
		return te.text.JA
	}
	for sentinel, ja := range sentinelJA {
		if errors.Is(err, sentinel) {
			return ja + " (" + err.Error() + ")"
		}
	}
	return err.Error()
}

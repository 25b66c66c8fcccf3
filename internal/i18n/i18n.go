package i18n

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Lang is a language the lab speaks.
type Lang string

// The lab's languages.
const (
	JA Lang = "ja"
	EN Lang = "en"
)

// Langs returns the supported languages, Japanese first.
func Langs() []Lang { return []Lang{JA, EN} }

// Valid reports whether l is one of Langs.
func (l Lang) Valid() bool { return l == JA || l == EN }

// Text is one string in both languages. A missing translation is an empty
// field, which Complete (and Catalog.Check) reject. Its JSON (and so YAML)
// form is {ja: ..., en: ...}.
type Text struct {
	JA string `json:"ja"`
	EN string `json:"en"`
}

// In returns the text in l; anything but JA is English.
func (t Text) In(l Lang) string {
	if l == JA {
		return t.JA
	}
	return t.EN
}

// Complete reports whether both languages have a non-blank text.
func (t Text) Complete() bool {
	return strings.TrimSpace(t.JA) != "" && strings.TrimSpace(t.EN) != ""
}

// Textf formats a Japanese and an English fmt pattern with the same
// arguments. It is for texts written next to the code that produces them
// (an exercise check's verdict); texts the page fills itself use a Catalog.
func Textf(ja, en string, args ...any) Text {
	return Text{fmt.Sprintf(ja, args...), fmt.Sprintf(en, args...)}
}

// Args are a message's placeholder values by name.
type Args map[string]string

// Msg is a catalog key with its arguments: what a producer sends when the
// reader, not the producer, picks the language.
type Msg struct {
	Key  string `json:"key"`
	Args Args   `json:"args,omitempty"`
}

var placeholder = regexp.MustCompile(`\{(\w+)\}`)

// Fill replaces each {name} in s by args[name]. A placeholder without a
// value stays as it is, so a forgotten argument shows instead of vanishing.
// The page's JS fills placeholders the same way (web/static/js/util.js).
func Fill(s string, args Args) string {
	if len(args) == 0 {
		return s
	}
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := args[m[1:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// Placeholders returns the distinct placeholder names in s, sorted.
func Placeholders(s string) []string {
	var out []string
	for _, m := range placeholder.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Catalog holds texts by key.
type Catalog map[string]Text

// T returns key's text in l, or the key itself when there is none (the
// catalog tests make sure that never ships).
func (c Catalog) T(l Lang, key string) string {
	if t, ok := c[key]; ok {
		return t.In(l)
	}
	return key
}

// Text returns m's text in both languages with its placeholders filled;
// an unknown key gives the key in both.
func (c Catalog) Text(m Msg) Text {
	t, ok := c[m.Key]
	if !ok {
		return Text{m.Key, m.Key}
	}
	return Text{Fill(t.JA, m.Args), Fill(t.EN, m.Args)}
}

// In is the whole catalog in one language, as a page's JS gets it.
func (c Catalog) In(l Lang) map[string]string {
	out := make(map[string]string, len(c))
	for k, t := range c {
		out[k] = t.In(l)
	}
	return out
}

// Keys returns every key, sorted.
func (c Catalog) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Merge returns one catalog holding every key of cs. A key defined twice is
// an error: two owners of one key would drift apart.
func Merge(cs ...Catalog) (Catalog, error) {
	out := Catalog{}
	var errs []error
	for _, c := range cs {
		for k, t := range c {
			if _, dup := out[k]; dup {
				errs = append(errs, fmt.Errorf("key %q is defined twice", k))
				continue
			}
			out[k] = t
		}
	}
	return out, errors.Join(errs...)
}

// Check reports every key that lacks a language or whose languages fill
// different placeholders.
func (c Catalog) Check() error {
	var errs []error
	for _, k := range c.Keys() {
		t := c[k]
		if strings.TrimSpace(t.JA) == "" {
			errs = append(errs, fmt.Errorf("%q has no Japanese text", k))
		}
		if strings.TrimSpace(t.EN) == "" {
			errs = append(errs, fmt.Errorf("%q has no English text", k))
		}
		if ja, en := Placeholders(t.JA), Placeholders(t.EN); !slices.Equal(ja, en) {
			errs = append(errs, fmt.Errorf("%q: placeholders differ: ja %v, en %v", k, ja, en))
		}
	}
	return errors.Join(errs...)
}

package tracetext

import (
	"testing"

	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/internal/testutil"
)

// TestCatalogComplete fails when a key lacks a Japanese or an English
// text, or the two fill different placeholders.
func TestCatalogComplete(t *testing.T) {
	if err := catalog.Check(); err != nil {
		t.Error(err)
	}
}

// TestKeysHaveTexts: every key constant has texts, and every text has a
// constant (nobody sends an unnamed key).
func TestKeysHaveTexts(t *testing.T) {
	consts, err := testutil.StringConstants("tracetext.go")
	if err != nil {
		t.Fatal(err)
	}
	for k := range consts {
		if _, ok := catalog[k]; !ok {
			t.Errorf("key %q has no texts", k)
		}
	}
	for k := range catalog {
		if !consts[k] {
			t.Errorf("text %q has no key constant", k)
		}
	}
}

// TestJapaneseIsJapanese: every Japanese text is a Japanese sentence, with
// names (in placeholders or i18n.KeptNames) the only English in it.
func TestJapaneseIsJapanese(t *testing.T) {
	for _, k := range catalog.Keys() {
		if why := i18n.NotJapanese(catalog[k].JA); why != "" {
			t.Errorf("%s: %q: %s", k, catalog[k].JA, why)
		}
	}
}

// TestEnglish: the English rendering fills every placeholder.
func TestEnglish(t *testing.T) {
	got := English(i18n.Msg{Key: NoPod, Args: i18n.Args{"ip": "10.0.0.9"}})
	if want := "connection refused: no Pod has IP 10.0.0.9"; got != want {
		t.Errorf("English = %q, want %q", got, want)
	}
}

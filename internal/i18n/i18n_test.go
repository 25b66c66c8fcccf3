package i18n

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestFill(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		args     Args
		want     string
	}{
		{"no args", "Step {n}", nil, "Step {n}"},
		{"one", "Step {n}", Args{"n": "3"}, "Step 3"},
		{"twice and two names", "{a}-{b}-{a}", Args{"a": "x", "b": "y"}, "x-y-x"},
		{"missing stays visible", "{a} {b}", Args{"a": "x"}, "x {b}"},
		{"value with braces is not refilled", "{a}", Args{"a": "{b}", "b": "no"}, "{b}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Fill(tc.in, tc.args); got != tc.want {
				t.Errorf("Fill(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestCatalog(t *testing.T) {
	c := Catalog{"hi": {"こんにちは {name}", "Hello {name}"}}
	if got := c.T(JA, "hi"); got != "こんにちは {name}" {
		t.Errorf("T(ja) = %q", got)
	}
	if got := c.T(EN, "nope"); got != "nope" {
		t.Errorf("an unknown key gives %q, want the key", got)
	}
	if got := c.Text(Msg{"hi", Args{"name": "web"}}); got != (Text{"こんにちは web", "Hello web"}) {
		t.Errorf("Text = %+v", got)
	}
	if got := c.In(EN); got["hi"] != "Hello {name}" || len(got) != 1 {
		t.Errorf("In(en) = %v", got)
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Catalog
		want string // substring of the error; "" = no error
	}{
		{"complete", Catalog{"a": {"あ {n}", "a {n}"}}, ""},
		{"no ja", Catalog{"a": {" ", "a"}}, `"a" has no Japanese text`},
		{"no en", Catalog{"a": {"あ", ""}}, `"a" has no English text`},
		{"placeholders differ", Catalog{"a": {"あ {n}", "a {m}"}}, "placeholders differ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Check()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Check() = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	m, err := Merge(Catalog{"a": {"あ", "a"}}, Catalog{"b": {"い", "b"}})
	if err != nil || !slices.Equal(m.Keys(), []string{"a", "b"}) {
		t.Errorf("Merge = %v, %v", m.Keys(), err)
	}
	if _, err := Merge(Catalog{"a": {"あ", "a"}}, Catalog{"a": {"あ", "a"}}); err == nil {
		t.Error("a key defined twice merged without an error")
	}
}

func TestTextJSON(t *testing.T) {
	var txt Text
	if err := json.Unmarshal([]byte(`{"ja":"題","en":"Title"}`), &txt); err != nil || txt != (Text{"題", "Title"}) || !txt.Complete() {
		t.Errorf("decoded %+v, %v", txt, err)
	}
	if txt.In(JA) != "題" || txt.In(EN) != "Title" {
		t.Errorf("In gives %q / %q", txt.In(JA), txt.In(EN))
	}
	if got := Textf("%d 個", "%d item(s)", 3); got != (Text{"3 個", "3 item(s)"}) {
		t.Errorf("Textf = %+v", got)
	}
}

func TestNotJapanese(t *testing.T) {
	for _, tc := range []struct {
		ja   string
		want bool // true: it is Japanese
	}{
		{"イベント {reason} が {source} から届きました", true},
		{"Service controller が動いていません", true},
		{"EnsuringLoadBalancer を確認しました", true},
		{"event EnsuringLoadBalancer from service-controller", false},
		{"ロードバランサー: no healthy targets", false},
		{"no targets", false},
	} {
		got := NotJapanese(tc.ja)
		if (got == "") != tc.want {
			t.Errorf("NotJapanese(%q) = %q", tc.ja, got)
		}
	}
}

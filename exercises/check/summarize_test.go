package check

import (
	"strings"
	"testing"

	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/dataplane/tracetext"
)

// A verdict that quotes a failed request quotes it in the verdict's own
// language: the Japanese verdict carries the data plane's Japanese text.
func TestSummarizeQuotesTheFailureInBothLanguages(t *testing.T) {
	args := i18n.Args{"target": "i-0123456789abcdef0", "state": "stopped"}
	m := i18n.Msg{Key: tracetext.TargetNotRunning, Args: args}
	tr := dataplane.Trace{Status: 504, Error: tracetext.English(m), ErrorKey: m.Key, ErrorArgs: m.Args}
	got := summarize(tr)
	want := tracetext.Catalog().Text(m)
	if !strings.Contains(got.JA, want.JA) || strings.Contains(got.JA, want.EN) {
		t.Errorf("JA = %q, want it to quote %q", got.JA, want.JA)
	}
	if !strings.Contains(got.EN, want.EN) {
		t.Errorf("EN = %q, want it to quote %q", got.EN, want.EN)
	}
	o := failText("リクエストが通りませんでした: %s", "the request did not get through: %s", got)
	if o.Pass || !strings.Contains(o.Detail.JA, want.JA) || !strings.Contains(o.Detail.EN, want.EN) {
		t.Errorf("failText = %+v", o)
	}
}

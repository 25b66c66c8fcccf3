package controllers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// The lbc add-on is switched through AddonSwitch (the lab scales the
// controller's Deployment) and reads what the cluster says (SetAddon): a
// switch alone does not turn Status on, and a change made outside the
// manager (kubectl scale) does.
func TestAddonSwitchAndState(t *testing.T) {
	prof, err := profile.Get("aws")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	base := Config{Client: fake.NewClientset(), Cloud: c, Profile: prof, Addons: []string{AddonLBC}}

	if _, err := NewManager(base); err == nil || !strings.Contains(err.Error(), "AddonSwitch") {
		t.Fatalf("NewManager without AddonSwitch: %v, want a refusal naming it", err)
	}

	type call struct {
		name string
		on   bool
	}
	var calls []call
	var m *Manager
	fail := false
	cfg := base
	cfg.Tuning.SwitchTimeout = 200 * time.Millisecond
	cfg.AddonSwitch = func(ctx context.Context, name string, on bool) error {
		calls = append(calls, call{name, on})
		if fail {
			<-ctx.Done() // a Pod that never starts
			return ctx.Err()
		}
		return nil
	}
	if m, err = NewManager(cfg); err != nil {
		t.Fatal(err)
	}
	ch, stop := m.Subscribe(8)
	defer stop()

	if m.Status()[AddonLBC] {
		t.Error("lbc on before the cluster said so")
	}
	if err := m.Enable(AddonLBC); err != nil {
		t.Fatal(err)
	}
	if m.Status()[AddonLBC] {
		t.Error("Enable turned the state on by itself; only SetAddon may")
	}
	m.SetAddon(AddonLBC, true)
	m.SetAddon(AddonLBC, true) // no change, no second switch
	m.SetAddon("bogus", true)  // ignored
	if !m.Status()[AddonLBC] {
		t.Error("SetAddon(on) did not show")
	}
	if err := m.Disable(AddonLBC); err != nil {
		t.Fatal(err)
	}
	m.SetAddon(AddonLBC, false)
	if len(calls) != 2 || calls[0] != (call{AddonLBC, true}) || calls[1] != (call{AddonLBC, false}) {
		t.Errorf("AddonSwitch calls %v", calls)
	}
	for _, want := range []bool{true, false} {
		select {
		case sc := <-ch:
			if sc.Controller != AddonLBC || sc.Enabled != want {
				t.Errorf("switch %+v, want lbc %t", sc, want)
			}
		default:
			t.Fatalf("no switch published for lbc %t", want)
		}
	}
	select {
	case sc := <-ch:
		t.Errorf("an extra switch: %+v", sc)
	default:
	}

	// Bounded: a controller that never starts is ErrBusy after
	// SwitchTimeout, saying so.
	fail = true
	if err := m.Enable(AddonLBC); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "not running") {
		t.Errorf("Enable with a controller that never runs: %v, want ErrBusy", err)
	}
}

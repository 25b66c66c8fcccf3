package awsapi

import (
	"slices"
	"testing"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// TestActionsDeclaredOnce: an action is declared once, by act with its
// handler: its name is its input type's, and the cloud's vocabulary for
// Faults.Deny and FailNext (cloud.Actions and cloud.AWSActions) is the
// list gennames wrote from the same declarations, so it is current
// (`go generate ./lab/awsapi` after adding an action).
func TestActionsDeclaredOnce(t *testing.T) {
	var served []string
	for _, s := range Services() {
		t.Run(s.ID, func(t *testing.T) {
			for _, a := range s.Actions {
				if want := a.In.Name(); a.Name+"Input" != want {
					t.Errorf("action %s serves %s", a.Name, want)
				}
				served = append(served, a.Name)
			}
		})
	}
	slices.Sort(served)
	served = slices.Compact(served)
	lab := cloud.Actions()
	want := slices.DeleteFunc(slices.Clone(served), func(a string) bool { return slices.Contains(lab, a) })
	if got := cloud.AWSActions(); !slices.Equal(got, want) {
		t.Errorf("cloud.AWSActions() = %v,\nwant the served actions that are not lab actions: %v (run go generate ./lab/awsapi)", got, want)
	}
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetFaults(cloud.Faults{Deny: served}); err != nil {
		t.Errorf("the cloud refuses to deny the served actions: %v", err)
	}
}

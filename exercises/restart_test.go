package exercises

import (
	"context"
	"slices"
	"testing"
)

// An unavailable exercise says which lab it runs in, when the lab can
// restart itself: the profile (the lab's own when only an add-on is
// missing) and the add-ons, those installed kept.
func TestRestartOffer(t *testing.T) {
	for _, tc := range []struct {
		name        string
		profile     string
		ctrl        fakeControllers
		restartable bool
		id          string
		want        *Restart // nil: no offer
	}{
		{"kubevirt hands-on from aws", "aws", fakeControllers{"node": true, "service": true}, true, "kubevirt-handson", &Restart{Profile: "kubevirt", Addons: []string{}}},
		{"lbc add-on, profile kept", "vpc-cni", fakeControllers{"node": true, "service": true}, true, "lb-class", &Restart{Profile: "vpc-cni", Addons: []string{"lbc"}}},
		{"a Service exercise from kubevirt", "kubevirt", fakeControllers{"node": true}, true, "security-groups", &Restart{Profile: "aws", Addons: []string{}}},
		{"installed add-ons kept", "aws", fakeControllers{"node": true, "service": true, "lbc": true}, true, "kubevirt-handson", &Restart{Profile: "kubevirt", Addons: []string{"lbc"}}},
		{"available: no offer", "aws", fakeControllers{"node": true, "service": true}, true, "security-groups", nil},
		{"a classroom's lab: no offer", "aws", fakeControllers{"node": true, "service": true}, false, "kubevirt-handson", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Config{Env: fakeEnv(t, tc.profile, tc.ctrl), Store: openStore(t), Restartable: tc.restartable})
			if err != nil {
				t.Fatal(err)
			}
			list, err := s.List(context.Background(), "en")
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(list, func(s Summary) bool { return s.ID == tc.id })
			if i < 0 {
				t.Fatalf("no exercise %s", tc.id)
			}
			got := list[i].Restart
			switch {
			case tc.want == nil && got != nil:
				t.Errorf("offer %+v, want none", got)
			case tc.want != nil && (got == nil || got.Profile != tc.want.Profile || !slices.Equal(got.Addons, tc.want.Addons)):
				t.Errorf("offer %+v, want %+v", got, tc.want)
			}
		})
	}
}

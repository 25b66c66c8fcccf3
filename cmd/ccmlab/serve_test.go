package main

import (
	"reflect"
	"testing"

	"github.com/spf13/pflag"

	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/controllers"
)

// The exercises are tested on apptest.Serve(sim.DefaultLab() + flags): the
// lab ccmlab serve builds from its flags must be that one, flag for flag.
func TestServeBuildsTheTestedLab(t *testing.T) {
	withLBC := sim.DefaultLab()
	withLBC.Addons = []string{controllers.AddonLBC}
	for _, tc := range []struct {
		name string
		args []string
		want sim.Lab
	}{
		{"no flags", nil, sim.DefaultLab()},
		{"--addons lbc (the exercises' test world)", []string{"--addons", "lbc"}, withLBC},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultServeOptions()
			fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			o.addFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := o.validate(); err != nil {
				t.Fatal(err)
			}
			got := o.appConfig().Lab()
			if got.Profile.Name != tc.want.Profile.Name || !reflect.DeepEqual(got.Controllers, tc.want.Controllers) ||
				!reflect.DeepEqual(got.Addons, tc.want.Addons) || got.Nodes != tc.want.Nodes || got.CloudLatency != tc.want.CloudLatency {
				t.Errorf("serve %v builds %+v, the tests build %+v", tc.args, got, tc.want)
			}
		})
	}
}

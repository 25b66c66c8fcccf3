package classroom

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/rest"
)

// flagValue is the value after flag in args ("" when absent).
func flagValue(args []string, flag string) string {
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		return ""
	}
	return args[i+1]
}

// Every lab process is started with the class's limits: the local backend
// passes them as ccmlab serve's flags (which apply them to the lab's own
// process at start, TestLocalClass reads them back from /proc), the
// kubernetes backend also as the Pod's resources.
func TestLabLimitsReachEveryLab(t *testing.T) {
	for _, tc := range []struct {
		name      string
		lab       LabOptions
		backend   string
		memFlag   string // --memory-limit
		files     string // --max-open-files
		limit     string // the Pod's memory limit
		request   string
		describes []string
	}{
		{"local, the defaults", LabOptions{}, BackendLocal, "1Gi", "4096", "", "",
			[]string{"memory 1Gi (Go soft limit)", "4096 open files", "100 load balancer listener sockets", "etcd 256Mi (backend quota)"}},
		{"local, the instructor's", LabOptions{Memory: 768 << 20, OpenFiles: 2048}, BackendLocal, "768Mi", "2048", "", "",
			[]string{"memory 768Mi (Go soft limit)", "2048 open files"}},
		{"kubernetes, the defaults", LabOptions{}, BackendKubernetes, "896Mi", "4096", "1Gi", "512Mi",
			[]string{"memory 1Gi (container limit; Go soft limit 896Mi)"}},
		{"kubernetes, little memory", LabOptions{Memory: 384 << 20}, BackendKubernetes, "336Mi", "4096", "384Mi", "384Mi", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &Config{Students: []string{"alice", "bob"}, Lab: tc.lab, Backend: tc.backend, Binary: "/bin/ccmlab",
				Kube: KubeOptions{RestConfig: &rest.Config{}, Namespace: "class", Image: "ccmlab:dev"}}
			if err := cfg.defaults(); err != nil {
				t.Fatal(err)
			}
			if err := cfg.validate(); err != nil {
				t.Fatal(err)
			}
			for _, s := range cfg.Students {
				var args []string
				switch tc.backend {
				case BackendLocal:
					b := newLocalBackend(cfg, &tokens{students: map[string]string{}}, nil)
					args = b.command(b.labs[s], "127.0.0.1:9999").Args
				case BackendKubernetes:
					b := &kubeBackend{cfg: cfg, opts: &cfg.Kube}
					ctr := b.deployment(s, corev1ac.Volume().WithName("data")).Spec.Template.Spec.Containers[0]
					args = ctr.Args
					if got := ctr.Resources.Limits.Memory(); got.Cmp(resource.MustParse(tc.limit)) != 0 {
						t.Errorf("%s's Pod: memory limit %s, want %s", s, got, tc.limit)
					}
					if got := (*ctr.Resources.Requests)[corev1.ResourceMemory]; got.Cmp(resource.MustParse(tc.request)) != 0 {
						t.Errorf("%s's Pod: memory request %s, want %s", s, &got, tc.request)
					}
				}
				if got := flagValue(args, "--memory-limit"); got != tc.memFlag {
					t.Errorf("%s's lab: --memory-limit %q, want %q (args %q)", s, got, tc.memFlag, args)
				}
				if got := flagValue(args, "--max-open-files"); got != tc.files {
					t.Errorf("%s's lab: --max-open-files %q, want %q", s, got, tc.files)
				}
			}
			d := cfg.Lab.Describe(tc.backend)
			for _, want := range tc.describes {
				if !strings.Contains(d, want) {
					t.Errorf("Describe = %q, want it to say %q", d, want)
				}
			}
		})
	}
}

func TestLabLimitsValidate(t *testing.T) {
	kube := KubeOptions{RestConfig: &rest.Config{}, Namespace: "class", Image: "ccmlab:dev"}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"too little memory", Config{Lab: LabOptions{Memory: 100 << 20}}, "--lab-memory 100Mi: give each lab at least 256Mi"},
		{"negative memory", Config{Lab: LabOptions{Memory: -1}}, "--lab-memory"},
		{"a Pod's Go runtime gets too little", Config{Lab: LabOptions{Memory: 256 << 20}, Backend: BackendKubernetes, Kube: kube}, "7/8 of it"},
		{"too few files", Config{Lab: LabOptions{OpenFiles: 100}}, "--lab-open-files 100: give each lab at least 1024"},
		{"enough", Config{Lab: LabOptions{Memory: 256 << 20, OpenFiles: 1024}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Students = []string{"alice"}
			err := tc.cfg.validate()
			if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

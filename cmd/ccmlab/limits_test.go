package main

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/pflag"

	"github.com/ccmlab/ccmlab/app"
)

// fakeLimits records what applyLimits does to the process.
type fakeLimits struct {
	env      map[string]string
	memory   int64 // 0: never set
	nofile   syscall.Rlimit
	setErr   error
	setCalls int
}

func (f *fakeLimits) runtime() limitsRuntime {
	return limitsRuntime{
		getenv:         func(k string) string { return f.env[k] },
		setMemoryLimit: func(n int64) int64 { f.memory = n; return 0 },
		getrlimit:      func(_ int, r *syscall.Rlimit) error { *r = f.nofile; return nil },
		setrlimit: func(_ int, r *syscall.Rlimit) error {
			f.setCalls++
			if f.setErr != nil {
				return f.setErr
			}
			f.nofile = *r
			return nil
		},
	}
}

// The flags become the limits of the process, said in one line at start;
// GOMEMLIMIT wins over --memory-limit, and no flag raises a hard limit.
func TestApplyLimits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		env      map[string]string
		hard     uint64
		setErr   error
		memory   int64  // the limit set (0: none set)
		nofile   uint64 // RLIMIT_NOFILE after (soft and hard)
		says     string
		errHas   string
		setCalls int
	}{
		{"the defaults", nil, nil, 20000, nil, app.DefaultMemoryLimit, 20000, "memory 1Gi (Go soft limit), 20000 open files", "", 0},
		{"a class's lab", []string{"--memory-limit", "768Mi", "--max-open-files", "4096"}, nil, 20000, nil, 768 << 20, 4096, "memory 768Mi (Go soft limit), 4096 open files", "", 1},
		{"GOMEMLIMIT wins", []string{"--memory-limit", "768Mi"}, map[string]string{"GOMEMLIMIT": "2GiB"}, 20000, nil, 0, 20000, "memory 2GiB (GOMEMLIMIT), 20000 open files", "", 0},
		{"no memory limit", []string{"--memory-limit", "0"}, nil, 20000, nil, 0, 20000, "memory unlimited", "", 0},
		{"above the hard limit", []string{"--max-open-files", "8192"}, nil, 4096, nil, app.DefaultMemoryLimit, 4096, "", "--max-open-files 8192: above this process's hard limit of 4096, which only root raises", 0},
		{"setrlimit refused", []string{"--max-open-files", "2048"}, nil, 4096, errors.New("operation not permitted"), app.DefaultMemoryLimit, 4096, "", "--max-open-files 2048: operation not permitted", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultServeOptions()
			fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			o.addFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := o.config()
			if err != nil {
				t.Fatal(err)
			}
			f := &fakeLimits{env: tc.env, nofile: syscall.Rlimit{Cur: tc.hard, Max: tc.hard}, setErr: tc.setErr}
			says, err := applyLimits(cfg, f.runtime())
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err = %v, want %q", err, tc.errHas)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(says, tc.says) {
				t.Errorf("says %q, want %q", says, tc.says)
			}
			if f.memory != tc.memory {
				t.Errorf("memory limit set to %d, want %d", f.memory, tc.memory)
			}
			if f.nofile.Cur != tc.nofile || f.nofile.Max != tc.nofile || f.setCalls != tc.setCalls {
				t.Errorf("RLIMIT_NOFILE %+v after %d calls, want %d soft and hard after %d", f.nofile, f.setCalls, tc.nofile, tc.setCalls)
			}
		})
	}
}

func TestLimitFlagsSayValidateWithFlagNames(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--memory-limit", "lots"}, `--memory-limit "lots": not a quantity such as 768Mi or 2Gi (0: none)`},
		{[]string{"--memory-limit", "100Mi"}, `--memory-limit "100Mi": must be 0 (none) or at least 256 MiB`},
		{[]string{"--max-open-files", "10"}, "--max-open-files 10: must be 0 (as inherited) or between 1024 and 1048576"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			o := defaultServeOptions()
			fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			o.addFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if _, err := o.config(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("config() = %v, want %q", err, tc.want)
			}
		})
	}
}

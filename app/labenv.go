package app

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ccmlab/ccmlab/exercises"
	"github.com/ccmlab/ccmlab/internal/datafs"
)

// writeLabEnv writes <data-dir>/lab.env, the one file a student's terminal
// sources (`. <data-dir>/lab.env`, the line the exercise panel shows) so
// that the exercises' terminal commands run as printed: kubectl on the
// lab's kubeconfig, and the AWS CLI on the lab's AWS API. It reads aws.env
// each time it is sourced rather than copying it, so sourcing it again
// after a restart picks up whatever the AWS API's address is then.
//
// It also names this ccmlab binary as the shell function ccmlab, so that
// the exercises' `ccmlab kubectl --infra ...` and `ccmlab curl` run from
// any directory (the binary is rarely on PATH: make run builds bin/ccmlab).
func writeLabEnv(files datafs.Writer, dataDir string) error {
	q := exercises.ShellQuote
	body := fmt.Sprintf(`# ccmlab: source this file in a terminal (. %[1]s), then kubectl, aws and
# the exercises' commands reach this lab.
export CCMLAB_DATA_DIR=%[2]s
export KUBECONFIG=%[3]s
if [ -r %[4]s ]; then . %[4]s; fi
`, q(filepath.Join(dataDir, exercises.LabEnvFile)), q(dataDir), q(filepath.Join(dataDir, "kubeconfig")), q(filepath.Join(dataDir, "aws.env")))
	if exe, err := os.Executable(); err == nil {
		body += fmt.Sprintf("ccmlab() { %s \"$@\"; }\n", q(exe))
	}
	return files.WriteFileAtomic(filepath.Join(dataDir, exercises.LabEnvFile), func(w io.Writer) error {
		_, err := io.WriteString(w, body)
		return err
	})
}

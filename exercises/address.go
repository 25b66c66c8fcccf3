package exercises

import (
	"path/filepath"
	"regexp"
	"strings"
)

// defaultAddr is the lab's address the exercises' commands are written with.
const defaultAddr = "localhost:8080"

// defaultDataDir is the data dir the exercises' commands are written with
// (`. .ccmlab/aws.env`): `ccmlab serve`'s default, relative to the
// directory it was started in.
const defaultDataDir = ".ccmlab"

// LabEnvFile is the file in the data dir that a terminal sources once
// (`. <data-dir>/lab.env`) so that the exercises' terminal commands reach
// this lab: KUBECONFIG, CCMLAB_DATA_DIR and, on the AWS-shaped profiles,
// aws.env's AWS_* variables (app writes it).
const LabEnvFile = "lab.env"

// dataDirRef matches the default data dir where a command names it as a
// path: at the start of a word (after a space, '=', a quote or '$(').
var dataDirRef = regexp.MustCompile(`(^|[\s='"(])\.ccmlab/`)

// onThisLab is CommandOnLab for this lab.
func (s *Service) onThisLab(cmd string) string {
	return CommandOnLab(cmd, s.cfg.Addr, s.cfg.DataDir)
}

// CommandOnLab rewrites a command written for the defaults (the API on
// localhost:8080, the data dir .ccmlab relative to where ccmlab started)
// to the lab's own address and data dir, so that a lab started with
// --listen 127.0.0.1:9090 or --data-dir /tmp/lab shows commands that reach
// it, from whichever directory the student's terminal is in. An empty
// dataDir leaves the data dir as written.
func CommandOnLab(cmd, addr, dataDir string) string {
	if addr != "" && addr != defaultAddr {
		cmd = strings.ReplaceAll(cmd, defaultAddr+"/", addr+"/")
	}
	if dataDir != "" && dataDir != defaultDataDir {
		// A dir a shell would split is quoted; the files after it are
		// plain names (aws.env, lab.env, kubeconfig).
		dir := ShellQuote(filepath.ToSlash(dataDir) + "/")
		cmd = dataDirRef.ReplaceAllStringFunc(cmd, func(m string) string {
			return strings.TrimSuffix(m, defaultDataDir+"/") + dir
		})
	}
	return cmd
}

// shellLine is what a terminal sources once for the exercises' terminal
// commands (Detail.Shell); "" when the lab's data dir is not known.
func (s *Service) shellLine() string {
	if s.cfg.DataDir == "" {
		return ""
	}
	return ". " + ShellQuote(filepath.ToSlash(filepath.Join(s.cfg.DataDir, LabEnvFile)))
}

// ShellQuote quotes s for a POSIX shell: as it is when it has only
// characters no shell reads specially, else in single quotes.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

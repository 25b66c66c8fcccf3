//go:build !linux

package classroom

import "syscall"

// labProcAttr puts a lab in its own process group, so stopping it reaches
// everything it runs. Pdeathsig is Linux's alone (macOS and the BSDs have
// no parent-death signal), so there a portal killed without a chance to
// stop its labs (SIGKILL, a crash) leaves them running: each keeps its
// port until it is stopped by hand (kill -- -PID, the PID in the portal's
// log line "lab starting"). A portal that stops normally stops its labs
// on every platform (localBackend.stopAll, when its Run ends).
func labProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

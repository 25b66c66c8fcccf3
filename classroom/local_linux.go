package classroom

import "syscall"

// labProcAttr puts a lab in its own process group, so stopping it reaches
// everything it runs, and asks Linux to send it SIGTERM when the portal
// dies without a chance to stop it (Pdeathsig: the signal follows the
// thread that started it; Go rarely ends threads, and the graceful path
// in stop does not depend on it).
func labProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

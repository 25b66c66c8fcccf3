//go:build !linux

package lowports

import (
	"errors"
	"runtime"
)

// supported: outside Linux (macOS above all) only 127.0.0.1 is
// configured on the loopback interface; a load balancer's own 127.x
// address would need `ifconfig lo0 alias` as root, which the lab does
// not do behind a student's back.
func supported() error {
	return errors.New("--lb-addresses needs every 127.x address on the loopback interface, which " + runtime.GOOS +
		" does not configure (only 127.0.0.1); use ccmlab curl, or the curl --connect-to line ccmlab lbs prints")
}

package dataplane

import (
	"net"
	"strconv"
)

func hostPort(host string, port int32) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// hostOnly strips the port from a "host:port" remote address.
func hostOnly(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

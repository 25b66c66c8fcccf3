package main

import (
	"net"
	"testing"
)

func TestStudentAddr(t *testing.T) {
	for _, tc := range []struct{ listen, want string }{
		{"127.0.0.1:8080", "localhost:8080"},
		{"0.0.0.0:9090", "localhost:9090"},
		{"[::]:9090", "localhost:9090"},
		{"10.1.2.3:8080", "10.1.2.3:8080"},
	} {
		a, err := net.ResolveTCPAddr("tcp", tc.listen)
		if err != nil {
			t.Fatal(err)
		}
		if got := studentAddr(a); got != tc.want {
			t.Errorf("studentAddr(%s) = %q, want %q", tc.listen, got, tc.want)
		}
	}
}

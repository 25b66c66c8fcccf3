package exercises

import (
	"strings"
)

// defaultAddr is the lab's address the exercises' commands are written with.
const defaultAddr = "localhost:8080"

// onThisLab rewrites a command written for the default address to the
// lab's own, so a lab started with --listen 127.0.0.1:9090 shows commands
// that reach it.
func (s *Service) onThisLab(cmd string) string {
	if s.cfg.Addr == defaultAddr {
		return cmd
	}
	return strings.ReplaceAll(cmd, defaultAddr+"/", s.cfg.Addr+"/")
}

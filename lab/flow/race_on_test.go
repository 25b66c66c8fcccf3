//go:build race

package flow_test

// raceEnabled reports whether the test binary was built with -race.
const raceEnabled = true

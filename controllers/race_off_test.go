//go:build !race

package controllers

// raceEnabled reports whether the test binary was built with -race.
const raceEnabled = false

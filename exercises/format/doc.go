// Package format is the exercise file format: the Go types of an
// exercise, its setup, steps, check specs and quiz; parsing the YAML
// strictly; validating its structure (ids, both languages of every text,
// known profiles and controllers, one right answer per question); and the
// embedded files themselves (defs/*.yaml). docs/exercises.md describes the
// format.
//
// What a check spec's kind and parameters mean is not decided here:
// package check owns the kinds and validates specs against them, so this
// package stays free of the lab's clients and the checker can import it.
package format

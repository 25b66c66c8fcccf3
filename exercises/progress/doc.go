// Package progress keeps students' exercise progress in an SQLite file in
// the data dir (modernc.org/sqlite, pure Go, so the binary needs no cgo):
// per exercise when it was started, per step when it passed and how many
// checks it took, per question the last answer. It survives restarts of
// the lab; resetting an exercise starts its progress over.
package progress

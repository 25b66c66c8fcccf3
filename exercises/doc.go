// Package exercises turns the chapter into hands-on labs that check
// themselves against the lab's real state. This package is the service;
// its parts are packages of their own:
//
//   - format: the exercise files (format/defs/*.yaml, embedded; described
//     in docs/exercises.md): one file per exercise, every text in Japanese
//     and English, with steps (commands to try, checks, hints, an
//     explanation shown after success), a quiz with the reasoning for
//     every choice, and the setup "reset exercise" applies. format checks
//     a file's structure.
//   - check: the checker. Named check kinds with parameters, each
//     evaluated against the running lab through check.Env. check.Validate
//     says whether a spec fits its kind; New runs it on every spec of
//     every file, so a file that names an unknown check, misses a
//     translation or has a quiz without exactly one right answer stops the
//     lab from starting.
//   - progress: an SQLite file in the data dir keeps each exercise's
//     start, steps passed and quiz answers across restarts.
//   - console: runs one kubectl command typed in the page with the
//     embedded kubectl, without a shell, under a policy that allows only
//     the chapter's subcommands.
//
// The service (service.go, reset.go) offers List, Get, Check, Answer and
// Reset, the calls behind the HTTP endpoints. Check walks the steps in
// order, so a step passes only after the ones before it. Reset applies an
// exercise's setup to the running lab (switches, faults, objects, nodes,
// taints) and clears its progress.
package exercises

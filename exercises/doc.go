// Package exercises turns the chapter into hands-on labs that check
// themselves against the lab's real state.
//
// It has five parts; progress and the console are packages of their own:
//
//   - The exercises (defs/*.yaml, embedded; the format is in docs/exercises.md):
//     one file per exercise, every text in Japanese and English, with
//     steps (commands to try, checks, hints, an explanation shown after
//     success), a quiz with the reasoning for every choice, and the setup
//     "reset exercise" applies. A file that misses a translation, names an
//     unknown check or has a quiz without exactly one right answer does not
//     load.
//   - The checker (checks.go): named check kinds with parameters
//     (nodesInitialized, podsPending, serviceExternalIP, serviceEvents,
//     extraHop, routeForEveryNode, nodeDeleted, ...), each evaluated
//     against the running lab through Env: the apiserver, the simulated
//     cloud, the flows, the controller switches and the data plane. Checks
//     that prove traffic flows send their own requests through the data
//     plane. Every kind is table-tested both passing and failing.
//   - Progress (package progress): an SQLite file in the data dir keeps
//     each exercise's start, steps passed and quiz answers across restarts.
//   - Service (service.go, reset.go): List, Get, Check, Answer and Reset,
//     the calls behind the HTTP endpoints. Check walks the steps in order,
//     so a step passes only after the ones before it. Reset applies an
//     exercise's setup to the running lab (switches, faults, objects,
//     nodes, taints) and clears its progress.
//   - Console (package console): runs one kubectl command typed in the
//     page with the embedded kubectl, without a shell, under a policy that
//     allows only the chapter's subcommands.
package exercises

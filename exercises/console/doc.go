// Package console runs one kubectl command typed in the page with the
// embedded kubectl of the ccmlab binary, against the lab's kubeconfig,
// without a shell.
//
// Parse is the policy, an allowlist (policy.go): a small quote-aware
// splitter (POSIX words, quotes and backslashes) refuses separators,
// pipes, redirections and substitutions; the words are then read with
// kubectl's own command tree and flag definitions (tree.go, copied once
// from NewKubectlCommand into plain data, parsed into a fresh pflag set
// each time so no process-wide flag is ever set), so combined short flags,
// = and space forms and kubectl's underscore spellings mean exactly what
// they mean to kubectl. Only the listed subcommands run, each with only its
// listed flags; -o takes only inline printers, get --raw only the API's
// own paths. cmd/ccmlab's TestConsoleTreeIsEmbeddedKubectls keeps the copy
// equal to the embedded kubectl.
//
// Run adds the sandbox: a fresh empty working directory and HOME outside
// the data dir for each command, an environment of KUBECONFIG, HOME,
// KUBERC=off, an empty PATH and LANG only, a timeout, bounded output and a
// bound on commands running at once.
package console

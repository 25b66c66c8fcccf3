// Package console runs one kubectl command typed in the page with the
// embedded kubectl of the ccmlab binary, against the lab's kubeconfig,
// without a shell.
//
// Parse is the policy: a small quote-aware splitter (POSIX words, quotes
// and backslashes) refuses separators, pipes, redirections and
// substitutions, and only the chapter's subcommands are allowed, with no
// flag that reaches files, the host or other credentials. It is our own
// rather than a general shell-words library because refusing what a shell
// would interpret is its job, not splitting everything a shell accepts.
// Run adds the sandbox: an empty working directory and environment, a
// timeout, bounded output and a bound on commands running at once.
package console

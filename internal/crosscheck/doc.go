// Command crosscheck type-checks packages and everything they import, from
// source, as a build for another GOOS/GOARCH would see them (make test runs
// it for macOS, the students' laptops).
//
// It is the cross build without the compiler's back end: the same files
// chosen by build constraints, the same type errors (a Linux-only field such
// as syscall.SysProcAttr.Pdeathsig in a file macOS builds), none of the code
// generation. Compiling all of Kubernetes once more for darwin/arm64 cost
// about 1,200 CPU-seconds on an empty cache (2 cores: ten minutes of a CI
// run that must stay under 45); type-checking the same 3,000 packages costs
// about 50. `make cross` still builds the real binaries.
package main

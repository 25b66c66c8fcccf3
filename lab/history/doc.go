// Package history records what happened in the lab, in order, so that an
// exercise can ask "did this happen after that, and who did it?" instead
// of looking at a snapshot.
//
// A Recorder is a bounded ring (Config.Size entries, DefaultSize = 4096)
// of numbered entries: Kubernetes object changes (Nodes, Services, Pods,
// Events) with the field managers that wrote them, cloud API calls with
// their caller, controller switches, fault changes, data-plane traces with
// their origin, answers typed by a student, and marks (an exercise reset).
// Entries are numbered 1, 2, 3, ... without gaps for the life of the
// process; a reader remembers a number (a mark) and asks for everything
// after it. When more than Size entries were recorded after a mark the
// oldest ones are gone: Since says so, and a check then fails rather than
// guess.
//
// Who made an object change comes from metadata.managedFields: the
// managers whose entry is new or whose timestamp moved in that write.
// The CCM's controllers all write as its binary's name,
// "aws-cloud-controller-manager" (ccmnames.FieldManager, as upstream's
// do on a real cluster), the simulated kubelets as
// "kubelet", kubectl as "kubectl-<command>" (kubectl-create,
// kubectl-expose, kubectl-taint, kubectl-patch, ...). A removal that
// leaves the remover owning nothing (kubectl taint node X key-) names no
// manager at all: the change is then recorded with no writer, which is
// enough to tell that it was not the CCM.
//
// Uninteresting writes are not recorded: a Node write that only moves
// heartbeat times, and any write that changes nothing but metadata
// bookkeeping (resourceVersion, managedFields times).
package history

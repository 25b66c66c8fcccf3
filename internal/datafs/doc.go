// Package datafs is how the lab writes files into its data dir, and the
// seam through which tests make that disk full.
//
// A full data-dir disk must not take the lab down: writers report it with
// an error for which IsFull is true, the HTTP API answers 507 and the page
// shows a banner until space is freed. Tests cannot fill a real disk
// cheaply, so the parts that write (the cloud's state file, the server's
// space probe) take a Writer in their Config; Switch is a Writer that fails
// like a full disk while a test says so.
//
// etcd keeps the cluster's objects in the data dir too, under a quota of
// its own; once that is used up, the apiserver answers writes with etcd's
// "database space exceeded", which IsEtcdFull recognises, and the API
// answers it like a full disk.
package datafs

package datafs

import (
	"errors"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// EtcdNoSpace is what etcd answers a write once its database has reached
// its backend quota and the NOSPACE alarm is raised (rpctypes.ErrGRPCNoSpace
// in go.etcd.io/etcd/api/v3/v3rpc/rpctypes/error.go): until the alarm is
// disarmed it refuses every write that would take space, reads and deletes
// still pass. The apiserver hands the error on unchanged
// (storage/errors.InterpretCreateError and its siblings return an error
// they do not know as it is), and responsewriters.ErrorToAPIStatus turns
// it into a Status with code 500, no reason and this text as its message:
// that text is all a client of the apiserver learns.
const EtcdNoSpace = "etcdserver: mvcc: database space exceeded"

// IsEtcdFull reports whether err is etcd's answer that its database is
// full, as it comes back through the apiserver. An API status must be the
// 500 the apiserver gives it, so that a validation error quoting the text
// back (a label value, an annotation) is not taken for it; an error that
// carries no status (one wrapped with %v on its way) is recognised by its
// text.
func IsEtcdFull(err error) bool {
	if err == nil {
		return false
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		return s.Code == http.StatusInternalServerError && strings.Contains(s.Message, EtcdNoSpace)
	}
	return strings.Contains(err.Error(), EtcdNoSpace)
}

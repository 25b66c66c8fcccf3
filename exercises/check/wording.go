package check

import (
	"fmt"
	"strings"

	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/dataplane"
)

// The evidence kinds' verdicts are read by students, not by the checker's
// authors: they say what happened (or did not) in sentences, with the
// objects' names, and keep the parameters' ids (ingressSet, notccm, "*")
// out. This file turns the parameters into those words, in both languages.

// changeWords is one change of objectChange in words. The English forms
// follow a subject ("Service web" or "no Service"): past ("was created"),
// perfect ("has been created"); the Japanese ones follow a subject with
// が/は: done ("が作られました"), not yet ("はまだ作られていません").
type changeWords struct {
	past, perfect string
	jaDone, jaNot string
}

var changeText = map[string]changeWords{
	ChangeCreated:            {"was created", "has been created", "が作られました", "はまだ作られていません"},
	ChangeDeleted:            {"was deleted", "has been deleted", "が削除されました", "はまだ削除されていません"},
	ChangeUpdated:            {"was updated", "has been updated", "が更新されました", "はまだ更新されていません"},
	ChangeTaintRemoved:       {"lost the uninitialized taint", "has lost the uninitialized taint", "から uninitialized の taint が外れました", "の uninitialized の taint はまだ外れていません"},
	ChangeShutdownTaintAdded: {"got the shutdown taint", "has got the shutdown taint", "に shutdown の taint が付きました", "にはまだ shutdown の taint が付いていません"},
	ChangeProviderIDSet:      {"got its providerID", "has got its providerID", "に providerID が書かれました", "にはまだ providerID が書かれていません"},
	ChangeIngressSet:         {"got its EXTERNAL-IP (status.loadBalancer.ingress)", "has got its EXTERNAL-IP", "に EXTERNAL-IP (status.loadBalancer.ingress) が入りました", "にはまだ EXTERNAL-IP が入っていません"},
	ChangeIngressCleared:     {"lost its EXTERNAL-IP", "has lost its EXTERNAL-IP", "の EXTERNAL-IP が消えました", "の EXTERNAL-IP はまだ消えていません"},
	ChangeFinalizerRemoved:   {"lost its load-balancer-cleanup finalizer", "has lost its load-balancer-cleanup finalizer", "から load-balancer-cleanup の finalizer が外れました", "の load-balancer-cleanup の finalizer はまだ外れていません"},
	ChangeDeletionStarted:    {"started to be deleted (deletionTimestamp)", "has started to be deleted", "の削除が始まりました (deletionTimestamp)", "の削除はまだ始まっていません"},
	ChangePolicyLocal:        {"was switched to externalTrafficPolicy: Local", "has been switched to externalTrafficPolicy: Local", "の externalTrafficPolicy が Local になりました", "の externalTrafficPolicy はまだ Local になっていません"},
	ChangeRunning:            {"started running", "has started running", "が Running になりました", "はまだ Running になっていません"},
}

// subject names the object(s) a check is about: "Service web", or for
// any of a resource "a Service" (en, with article) / "Service" (ja).
type subject struct {
	named    bool
	en, enNo string // "Service web" / "" , or "a new Node" / "no new Node"
	ja       string
}

func subjectOf(resource, name, nodes string) subject {
	kind := map[string]string{"nodes": "Node", "services": "Service", "pods": "Pod"}[resource]
	if kind == "" {
		kind = resource
	}
	if name != "" {
		return subject{named: true, en: kind + " " + name, ja: kind + " " + name}
	}
	if nodes == "new" {
		return subject{en: "a new " + kind, enNo: "no new " + kind, ja: "新しい " + kind}
	}
	return subject{en: "a " + kind, enNo: "no " + kind, ja: kind}
}

// changeDone: "Service web got its EXTERNAL-IP ...".
func changeDone(resource, name, change string) i18n.Text {
	w, ok := changeText[change]
	if !ok {
		w = changeWords{past: "changed (" + change + ")", jaDone: " が変わりました (" + change + ")"}
	}
	// The object that changed always has a name.
	s := subjectOf(resource, name, "")
	return i18n.Text{JA: s.ja + " " + strings.TrimSpace(w.jaDone), EN: s.en + " " + w.past}
}

// changeNotYet: "Service web has not got its EXTERNAL-IP", "no new Node
// has lost the uninitialized taint".
func changeNotYet(resource, name, nodes, change string) i18n.Text {
	w, ok := changeText[change]
	if !ok {
		w = changeWords{perfect: "has changed (" + change + ")", jaNot: " はまだ変わっていません (" + change + ")"}
	}
	s := subjectOf(resource, name, nodes)
	en := s.enNo + " " + w.perfect
	if s.named {
		en = s.en + " " + strings.Replace(w.perfect, "has ", "has not ", 1)
	}
	ja := s.ja + w.jaNot
	if strings.HasPrefix(w.jaNot, "は") || strings.HasPrefix(w.jaNot, "に") || strings.HasPrefix(w.jaNot, "の") {
		ja = s.ja + " " + w.jaNot
	}
	return i18n.Text{JA: ja, EN: en}
}

// whoWrote names the writers of a change by their field managers.
func whoWrote(managers []string) i18n.Text {
	if len(managers) == 0 {
		return i18n.Text{JA: "名前の記録されていない書き手", EN: "a writer the lab could not name"}
	}
	var ja, en []string
	for _, m := range managers {
		switch {
		case ccmnames.IsCCM(m):
			ja, en = append(ja, "CCM ("+m+")"), append(en, "the CCM ("+m+")")
		case m == ManagerKubelet:
			ja, en = append(ja, "kubelet"), append(en, "a kubelet")
		case strings.HasPrefix(m, "kubectl"):
			ja, en = append(ja, "kubectl ("+m+")"), append(en, "kubectl ("+m+")")
		default:
			ja, en = append(ja, m), append(en, m)
		}
	}
	return i18n.Text{JA: strings.Join(ja, "、"), EN: strings.Join(en, " and ")}
}

// expectedWriter is the "by" parameter in words.
func expectedWriter(by string) i18n.Text {
	switch by {
	case ByCCM:
		return i18n.Text{JA: "CCM", EN: "the CCM"}
	case ByKubelet:
		return i18n.Text{JA: "kubelet", EN: "a kubelet"}
	case ByKubectl:
		return i18n.Text{JA: "kubectl", EN: "kubectl"}
	case ByNotCCM:
		return i18n.Text{JA: "CCM 以外", EN: "someone other than the CCM"}
	}
	return i18n.Text{JA: by, EN: by}
}

// callsWanted describes the calls a cloudCall check counts, n of them:
// "2 successful CreateRoute calls by route-controller".
func callsWanted(action, caller, result, code string, n int) i18n.Text {
	action = strings.ReplaceAll(action, "|", " / ")
	if action == "*" {
		action = "API" // any call: "failed API calls by service-controller"
	}
	code = strings.ReplaceAll(code, "|", " / ")
	var ja, en string
	switch {
	case code != "":
		ja, en = fmt.Sprintf("%s で失敗した ", code), "failed "
	case result == "ok":
		ja, en = "成功した ", "successful "
	case result == "error":
		ja, en = "失敗した ", "failed "
	}
	ja += action + " の呼び出し"
	en += action + " call"
	if n != 1 {
		en += "s"
	}
	if caller != "" {
		ja = caller + " による " + ja
		en += " by " + caller
	}
	if code != "" {
		en += " (error " + code + ")"
	}
	return i18n.Text{JA: ja, EN: en}
}

// pathWords names how a request went in, before the Service: "through
// its load balancer" (en, after it), "ロードバランサー経由で" (ja); ""
// for any path.
func pathWords(via string) i18n.Text {
	switch via {
	case dataplane.KindLoadBalancer:
		return i18n.Text{JA: "ロードバランサー経由で", EN: " through its load balancer"}
	case dataplane.KindNodePort:
		return i18n.Text{JA: "NodePort 経由で", EN: " through a NodePort"}
	case dataplane.KindClusterIP:
		return i18n.Text{JA: "ClusterIP 経由で", EN: " through its ClusterIP"}
	}
	return i18n.Text{}
}

// join2 formats a verdict from two texts already in both languages.
func join2(ja, en string, a, b i18n.Text, rest ...any) i18n.Text {
	return i18n.Text{
		JA: fmt.Sprintf(ja, append([]any{a.JA, b.JA}, rest...)...),
		EN: fmt.Sprintf(en, append([]any{a.EN, b.EN}, rest...)...),
	}
}

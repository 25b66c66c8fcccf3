package i18n

import "testing"

func TestEnglishSentence(t *testing.T) {
	for _, tc := range []struct {
		ja, want string
	}{
		{"Service controller が動いていません。", ""},
		{"kubectl get svc shop -o wide で確かめます。", ""},
		{"controller パネルで lbc をオンにします。", ""},
		{"ログに「Successfully initialized node with cloud provider」が出ます。", ""},
		{"AWS なら Throttling (Rate exceeded) を返します。", ""},
		{"AWS Load Balancer Controller が読む注釈", ""},
		{"status.loadBalancer.ingress と EXTERNAL-IP と providerID", ""},
		{"unavailable: needs the lbc add-on", "needs the lbc"},
		{"前のステップの後、no created of nodes has happened yet", "no created of"},
		{"これは the load balancer です", "the load balancer"},
	} {
		if got := EnglishSentence(tc.ja); got != tc.want {
			t.Errorf("EnglishSentence(%q) = %q, want %q", tc.ja, got, tc.want)
		}
	}
}

package profile

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseControllers(t *testing.T) {
	aws, _ := Get("aws")
	kv, _ := Get("kubevirt")
	tests := []struct {
		name    string
		p       Profile
		in      string
		want    []string
		wantErr string
	}{
		{"default", aws, "", []string{"node", "nodelifecycle", "route", "service"}, ""},
		{"none", aws, "none", nil, ""},
		{"list", aws, "service, node,service", []string{"service", "node"}, ""},
		{"unknown", aws, "node,bogus", nil, `unknown controller "bogus"`},
		{"absent in profile", kv, "service", nil, "the kubevirt profile has no service controller"},
		{"none mixed", aws, "none,node", nil, `"none" cannot be combined`},
		{"empty item", aws, "node,,route", nil, "empty name"},
		{"kubevirt default", kv, "", []string{"node", "nodelifecycle"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.p.ParseControllers(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestGetUnknown(t *testing.T) {
	if _, err := Get("gcp"); err == nil || !strings.Contains(err.Error(), "valid: aws, ip, kubevirt, vpc-cni") {
		t.Fatalf("err = %v", err)
	}
}

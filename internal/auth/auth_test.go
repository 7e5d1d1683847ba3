package auth

import (
	"testing"

	"backoffice/internal/domain"
)

func TestParseHeader(t *testing.T) {
	tests := []struct {
		header string
		want   Credential
		ok     bool
	}{
		{"Bearer tok123", Credential{domain.CredentialSession, "tok123"}, true},
		{"bearer tok123", Credential{domain.CredentialSession, "tok123"}, true},
		{"BEARER    tok123", Credential{domain.CredentialSession, "tok123"}, true},
		{"Api-Key k1", Credential{domain.CredentialAPIKey, "k1"}, true},
		{"API-KEY k1", Credential{domain.CredentialAPIKey, "k1"}, true},
		{"api-key  k1", Credential{domain.CredentialAPIKey, "k1"}, true},
		{"", Credential{}, false},
		{"Bearer", Credential{}, false},
		{"Bearer ", Credential{}, false},
		{"Bearer    ", Credential{}, false},
		{"Basic dXNlcjpwYXNz", Credential{}, false},
		{"ApiKey k1", Credential{}, false},
		{"Bearer a b", Credential{}, false},
		{"Bearer\ttok", Credential{}, false},
		{" Bearer tok", Credential{}, false},
	}
	for _, tt := range tests {
		got, err := ParseHeader(tt.header)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseHeader(%q) = %+v, %v; want %+v, ok=%v", tt.header, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzParseHeader(f *testing.F) {
	for _, s := range []string{"Bearer x", "Api-Key y", "", " ", "bearer  z", "Api-Key \x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		c, err := ParseHeader(h)
		if err == nil && (c.Secret == "" || c.Kind == "") {
			t.Fatalf("ParseHeader(%q) accepted an empty credential: %+v", h, c)
		}
	})
}

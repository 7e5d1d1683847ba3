package app

import (
	"flag"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCORSOriginsConfig(t *testing.T) {
	cases := []struct {
		name string
		env  string
		args []string
		want []string
		err  string // part of the error, when one is expected
	}{
		{"unset: off", "", nil, nil, ""},
		{"one", "https://crm.example.com", nil, []string{"https://crm.example.com"}, ""},
		{"several, spaces around commas", "https://crm.example.com, http://localhost:3000,http://[::1]:8000", nil,
			[]string{"https://crm.example.com", "http://localhost:3000", "http://[::1]:8000"}, ""},
		{"the flag overrides", "https://crm.example.com", []string{"--cors-origins", "https://other.example.com"}, []string{"https://other.example.com"}, ""},
		{"a trailing slash would never match", "https://crm.example.com/", nil, nil, `write "https://crm.example.com"`},
		{"upper case would never match", "https://CRM.example.com", nil, nil, `write "https://crm.example.com"`},
		{"a default port would never match", "https://crm.example.com:443", nil, nil, `write "https://crm.example.com"`},
		{"a path", "https://crm.example.com/app", nil, nil, "no path"},
		{"a wildcard", "*", nil, nil, "not an origin"},
		{"no scheme", "crm.example.com", nil, nil, "not an origin"},
		{"another scheme", "ftp://crm.example.com", nil, nil, "not an origin"},
		{"null", "null", nil, nil, "not an origin"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := loadConfig(envOf(map[string]string{"BACKOFFICE_CORS_ORIGINS": c.env}))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "BACKOFFICE_CORS_ORIGINS") {
					t.Fatalf("error = %v, want one naming BACKOFFICE_CORS_ORIGINS about %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			cfg.serveFlags(fs)
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, cfg.CORSOrigins); diff != "" {
				t.Errorf("origins (-want +got):\n%s", diff)
			}
		})
	}
}

package app

import (
	"flag"
	"strconv"
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
		{"upper-case scheme", "HTTPS://crm.example.com", nil, nil, `write "https://crm.example.com"`},
		// Hosts as browsers serialize them: punycode, dotted-decimal IPv4, compressed IPv6.
		{"punycode", "https://xn--bcher-kva.example", nil, []string{"https://xn--bcher-kva.example"}, ""},
		{"an internationalized host is sent in punycode", "https://bücher.example", nil, nil, `write "https://xn--bcher-kva.example"`},
		{"an IPv4 address", "http://127.0.0.1:8080", nil, []string{"http://127.0.0.1:8080"}, ""},
		{"a short IPv4 address", "http://127.1:8080", nil, nil, "dotted decimal"},
		{"a host ending in a number that is no address", "http://example.999", nil, nil, "IPv4"},
		{"IPv6 is sent compressed, in lower case", "http://[2001:DB8:0:0:0:0:0:1]:8000", nil, nil, `write "http://[2001:db8::1]:8000"`},
		{"an IPv6 zone", "http://[fe80::1%25eth0]", nil, nil, "IPv6"},
		{"unclosed IPv6", "http://[::1", nil, nil, "closing ]"},
		{"a wildcard host", "https://*.example", nil, nil, "wildcards are not supported"},
		{"a host no DNS name can be", "https://-bad-.example", nil, nil, "not a domain name"},
		{"a space in the host", "https://crm example.com", nil, nil, "not a domain name"},
		{"an underscore in the host", "https://crm_x.example.com", nil, nil, "not a domain name"},
		{"a label over 63 characters", "https://" + strings.Repeat("a", 64) + ".example", nil, nil, "not a domain name"},
		{"no host", "https://", nil, nil, "no host"},
		{"no host before the port", "https://:8080", nil, nil, "no host"},
		// Ports: 1 to 65535, decimal, without leading zeros.
		{"the highest port", "http://localhost:65535", nil, []string{"http://localhost:65535"}, ""},
		{"a port past 65535", "http://localhost:99999", nil, nil, "from 1 to 65535"},
		{"port 0", "http://localhost:0", nil, nil, "from 1 to 65535"},
		{"a signed port", "http://localhost:+80", nil, nil, "from 1 to 65535"},
		{"a port in hex", "http://localhost:0x50", nil, nil, "from 1 to 65535"},
		{"leading zeros are not sent", "http://localhost:03000", nil, nil, `write "http://localhost:3000"`},
		{"an empty port is no port", "http://localhost:", nil, nil, `write "http://localhost"`},
		{"a user name", "https://user@crm.example.com", nil, nil, "no user name"},
		{"a query", "https://crm.example.com?x=1", nil, nil, "no path"},
		{"a fragment", "https://crm.example.com#x", nil, nil, "no path"},
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

// Whatever is accepted is an origin as browsers serialize it: canonical (the check is a fixed
// point), http or https, a lower-case ASCII host without a wildcard, a port from 1 to 65535 that
// is not the scheme's default, nothing after the port.
func FuzzOriginsAreCanonical(f *testing.F) {
	for _, s := range []string{"https://crm.example.com", "http://[::1]:8000", "https://bücher.example", "http://127.1:99999",
		"https://*.example", "http://localhost:03000", "HTTP://A.example/", "https://xn--bcher-kva.example:443"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, o string) {
		got, err := parseOrigins(o)
		if err != nil || len(got) != 1 {
			return
		}
		origin := got[0]
		if again, err := canonicalOrigin(origin); err != nil || again != origin {
			t.Fatalf("%q accepted, but canonical is %q (%v)", origin, again, err)
		}
		scheme, rest, _ := strings.Cut(origin, "://")
		if scheme != "http" && scheme != "https" {
			t.Fatalf("%q: scheme %q", origin, scheme)
		}
		for _, r := range rest {
			if r > 0x7e || r <= ' ' || ('A' <= r && r <= 'Z') || strings.ContainsRune("*/?#@%\\", r) {
				t.Fatalf("%q: host holds %q", origin, r)
			}
		}
		host, port, err := splitHostPort(rest)
		if err != nil || host == "" {
			t.Fatalf("%q: host %q, %v", origin, host, err)
		}
		if port != "" {
			n, err := strconv.Atoi(port)
			if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port || (scheme == "http" && n == 80) || (scheme == "https" && n == 443) {
				t.Fatalf("%q: port %q", origin, port)
			}
		}
	})
}

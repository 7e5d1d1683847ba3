package app

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"backoffice/internal/store"
)

func TestPoolConfig(t *testing.T) {
	cases := []struct {
		name string
		vars map[string]string
		want store.Pool
		err  string // part of the error, when one is expected
	}{
		{"defaults", nil, store.DefaultPool, ""},
		{"all set", map[string]string{
			"BACKOFFICE_DB_MAX_OPEN_CONNS": "40", "BACKOFFICE_DB_MAX_IDLE_CONNS": "5",
			"BACKOFFICE_DB_CONN_MAX_LIFETIME": "1h", "BACKOFFICE_DB_CONN_MAX_IDLE_TIME": "0",
		}, store.Pool{MaxOpenConns: 40, MaxIdleConns: 5, ConnMaxLifetime: time.Hour}, ""},
		{"a smaller pool keeps no more idle than open", map[string]string{"BACKOFFICE_DB_MAX_OPEN_CONNS": "3"},
			store.Pool{MaxOpenConns: 3, MaxIdleConns: 3, ConnMaxLifetime: store.DefaultPool.ConnMaxLifetime, ConnMaxIdleTime: store.DefaultPool.ConnMaxIdleTime}, ""},
		{"zero open", map[string]string{"BACKOFFICE_DB_MAX_OPEN_CONNS": "0"}, store.Pool{}, "BACKOFFICE_DB_MAX_OPEN_CONNS"},
		{"not a number", map[string]string{"BACKOFFICE_DB_MAX_IDLE_CONNS": "many"}, store.Pool{}, "BACKOFFICE_DB_MAX_IDLE_CONNS"},
		{"more idle than open", map[string]string{"BACKOFFICE_DB_MAX_OPEN_CONNS": "2", "BACKOFFICE_DB_MAX_IDLE_CONNS": "4"}, store.Pool{}, "exceeds"},
		{"bad duration", map[string]string{"BACKOFFICE_DB_CONN_MAX_LIFETIME": "30"}, store.Pool{}, "BACKOFFICE_DB_CONN_MAX_LIFETIME"},
		{"negative duration", map[string]string{"BACKOFFICE_DB_CONN_MAX_IDLE_TIME": "-1m"}, store.Pool{}, "BACKOFFICE_DB_CONN_MAX_IDLE_TIME"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := loadConfig(envOf(c.vars))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error = %v, want one about %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, cfg.Pool); diff != "" {
				t.Errorf("pool (-want +got):\n%s", diff)
			}
		})
	}
}

package store

import (
	"database/sql"
	"time"

	"backoffice/internal/sqltx"
)

// Pool sizes and ages the connection pool. Every replica holds up to MaxOpenConns connections,
// so PostgreSQL's max_connections must cover replicas × MaxOpenConns plus headroom.
type Pool struct {
	// MaxOpenConns caps the connections in use and idle; requests beyond it wait for one.
	MaxOpenConns int
	// MaxIdleConns is how many connections stay open between requests (0: none).
	MaxIdleConns int
	// ConnMaxLifetime closes a connection this long after it was opened (0: never), so that
	// connections move to a new server after a failover or a load balancer change.
	ConnMaxLifetime time.Duration
	// ConnMaxIdleTime closes a connection idle this long (0: never), giving quiet replicas'
	// connections back to the server.
	ConnMaxIdleTime time.Duration
}

// DefaultPool is the pool of a store opened without WithPool.
func DefaultPool() Pool {
	return Pool{
		MaxOpenConns:    10,
		MaxIdleConns:    10,
		ConnMaxLifetime: 30 * time.Minute,
		ConnMaxIdleTime: 5 * time.Minute,
	}
}

// lostTries is how many times an operation that met a lost connection is tried again (see
// sqltx.DB.LostConnection): once per connection the pool may hold, and once more.
func (p Pool) lostTries() int {
	if p.MaxOpenConns > 0 {
		return p.MaxOpenConns + 1
	}
	return p.MaxIdleConns + 1
}

// forStatements is what the pool's statements and transactions need of p, on engine e.
func (p Pool) forStatements(e Engine) sqltx.Pool {
	return sqltx.Pool{MaxIdle: p.MaxIdleConns, LostTries: p.lostTries(), BusyWait: e.BusyTimeout()}
}

func (p Pool) apply(db *sql.DB) {
	db.SetMaxOpenConns(p.MaxOpenConns)
	db.SetMaxIdleConns(p.MaxIdleConns)
	db.SetConnMaxLifetime(p.ConnMaxLifetime)
	db.SetConnMaxIdleTime(p.ConnMaxIdleTime)
}

// Option adjusts how Open connects.
type Option func(*options)

type options struct {
	pool      Pool
	mustExist bool
}

// MustExist makes opening a SQLite file that does not exist an error naming the path, instead of
// creating it: only the commands that migrate (serve, import) create the database.
func MustExist() Option {
	return func(o *options) { o.mustExist = true }
}

// WithPool sets the connection pool's size and ages.
func WithPool(p Pool) Option {
	return func(o *options) { o.pool = p }
}

func collect(opts []Option) options {
	o := options{pool: DefaultPool()}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

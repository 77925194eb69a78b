package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisTarget is where -redis, -cluster and -sentinel-master point.
type redisTarget struct {
	spec    string // -redis: host:port, a comma-separated list, or a redis:// URL
	cluster bool   // -cluster: a single address is a cluster seed
	master  string // -sentinel-master: the addresses are sentinels
}

// kind names what t connects to, for the log.
func (t redisTarget) kind() string {
	switch {
	case t.master != "" || strings.Contains(t.spec, "master_name="):
		return "sentinel"
	case t.cluster || strings.Contains(t.spec, ",") || strings.Contains(t.spec, "addr="):
		return "cluster"
	}
	return "single"
}

// newRedisClient returns the client t names, with the settings a limiter
// needs whatever a URL says: calls bounded by budget, scripts never
// re-sent, one dial attempt.
//
//	-redis 127.0.0.1:6379                                  a single node
//	-redis 10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000       Redis Cluster (any nodes as seeds)
//	-redis 10.0.0.1:7000 -cluster                          Redis Cluster from one seed
//	-redis redis://10.0.0.1:7000?addr=10.0.0.2:7000        Redis Cluster, URL form
//	-redis 10.0.0.1:26379,10.0.0.2:26379 -sentinel-master mymaster
//	-redis redis://10.0.0.1:26379?master_name=mymaster     Sentinel, URL form
func newRedisClient(t redisTarget, budget time.Duration) (redis.UniversalClient, error) {
	if t.spec == "" {
		return nil, errors.New("-redis: empty")
	}
	isURL := strings.Contains(t.spec, "://")
	switch t.kind() {
	case "sentinel":
		opt := &redis.FailoverOptions{MasterName: t.master, SentinelAddrs: splitAddrs(t.spec)}
		if isURL {
			var err error
			if opt, err = redis.ParseFailoverURL(t.spec); err != nil {
				return nil, fmt.Errorf("-redis: %w", err)
			}
			if t.master != "" {
				opt.MasterName = t.master
			}
		}
		opt.MaxRetries, opt.ContextTimeoutEnabled, opt.DialerRetries = -1, true, 1
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = budget, budget, budget, budget
		opt.MinIdleConns = 8
		return redis.NewFailoverClient(opt), nil
	case "cluster":
		opt := &redis.ClusterOptions{Addrs: splitAddrs(t.spec)}
		if isURL {
			var err error
			if opt, err = redis.ParseClusterURL(t.spec); err != nil {
				return nil, fmt.Errorf("-redis: %w", err)
			}
		}
		// Scripts are never re-sent whatever MaxRetries says; other
		// settings as for a single node.
		opt.ContextTimeoutEnabled, opt.DialerRetries = true, 1
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = budget, budget, budget, budget
		opt.MinIdleConns = 8
		return redis.NewClusterClient(opt), nil
	}
	opt := &redis.Options{Addr: t.spec}
	if isURL {
		var err error
		if opt, err = redis.ParseURL(t.spec); err != nil {
			return nil, fmt.Errorf("-redis: %w", err)
		}
	}
	opt.MaxRetries, opt.ContextTimeoutEnabled, opt.DialerRetries = -1, true, 1 // never re-run a script that may have run; honour the budget
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = budget, budget, budget, budget
	opt.MinIdleConns = 8 // a timeout closes a connection: keep warm ones
	return redis.NewClient(opt), nil
}

// splitAddrs splits a comma-separated address list, or returns the hosts
// of a URL.
func splitAddrs(s string) []string {
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		return append([]string{u.Host}, u.Query()["addr"]...)
	}
	var addrs []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice/store/redisstore"
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

// newRedisClient returns the client t names, with the settings the store
// needs whatever a URL says (redisstore's options: scripts never re-sent,
// deadlines honoured, one dial attempt, connections kept ready), and
// timeouts of budget for the calls without a deadline of their own.
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
	addrs := []string{t.spec}
	if !strings.Contains(t.spec, "://") {
		addrs = splitAddrs(t.spec)
	}
	switch t.kind() {
	case "sentinel":
		opt, err := redisstore.FailoverOptions(t.master, addrs...)
		if err != nil {
			return nil, fmt.Errorf("-redis: %w", err)
		}
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = budget, budget, budget, budget
		return redis.NewFailoverClient(opt), nil
	case "cluster":
		opt, err := redisstore.ClusterOptions(addrs...)
		if err != nil {
			return nil, fmt.Errorf("-redis: %w", err)
		}
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = budget, budget, budget, budget
		return redis.NewClusterClient(opt), nil
	}
	opt, err := redisstore.ClientOptions(t.spec)
	if err != nil {
		return nil, fmt.Errorf("-redis: %w", err)
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = budget, budget, budget, budget
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

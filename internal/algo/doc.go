// Package algo holds the pure, integer-microsecond arithmetic of every
// algorithm. The in-process store calls it; the Redis store's Lua script is a
// line-for-line mirror of it, so both stores give identical answers. Every
// intermediate value stays below 2^53 for limits that pass
// [sluice.Limit.Validate] and clock readings before the year 2100.
package algo

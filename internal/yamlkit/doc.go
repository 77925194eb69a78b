// Package yamlkit is the strict YAML reading that sluice's configuration
// files share: the rule files (rules/rulefile) and the Envoy mapping files
// (envoy). A file is parsed into yaml.Node trees ([Input], [NewDocuments],
// [ReadFile]) and read node by node through a [Reader], so that every
// error names the line and the field it is about, an unknown or repeated
// field is an error, and no document can make the reader visit more than
// [MaxNodes] values, however many aliases it expands.
//
// Messages quote what the file says with [Quote], shortened, and never
// repeat an unknown field name longer than [MaxFieldName] bytes: such a
// name is more likely a secret pasted in the wrong place than a misspelt
// field. [Message] lays out the errors of both packages alike:
//
//	prefix: file:line: scope: field: what is wrong
package yamlkit

// The child process of the kill tests (issue 8): imports and edits through AmbarContainer and records every
// acknowledged save. Written by the reliability work; see Tests/ReliabilityTests.
print("ambar-crash: not implemented yet")

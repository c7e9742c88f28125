import Foundation
import Synchronization
import ObjectGraph

/// Nanoseconds per ``CostedOperation`` on a device: what turns a simulated run's operation counts into virtual
/// time (Docs/simulation.md "Cost profiles"). Read from `Profiles/<name>.yaml`.
public struct CostProfile: Sendable, Equatable {
    /// The profile's name (its file name without `.yaml`).
    public var name: String
    public var description: String
    /// The published figure the profile was fitted to (so that it does not also judge the profile).
    public var fittedTo: String
    /// Nanoseconds by ``CostedOperation`` raw value.
    public var nanos: [UInt64]
    /// Where each figure comes from, by operation name.
    public var sources: [String: String]
    /// Operations whose figure is an estimate, not a measurement.
    public var estimated: [String]
    /// The device the figures were measured on (`device:`), when the file names one.
    public var device: String? = nil
    /// The command line that wrote the file (`writtenBy:`), when a tool wrote it.
    public var writtenBy: String? = nil
    /// What the evidence behind the profile determined: parameters, data points, residual (written by the fit).
    public var evidence: String? = nil

    /// The longest an operation may be said to take: one second.
    static let maximumNanos: Double = 1e9

    /// The cost of one operation.
    package func cost(_ op: CostedOperation) -> UInt64 { nanos[op.rawValue] }

    /// The profile named `name`, or the file at `name` when it ends in `.yaml`. A name is looked up as
    /// `<name>.yaml` in `Profiles/` under the current directory, in each directory of `$AMBAR_PROFILE_PATH`, then
    /// in the `Profiles/` of the checkout the running program was built in (an ancestor of its executable).
    public static func load(_ name: String, root: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)) throws -> CostProfile {
        try load(name, root: root, depth: 0)
    }

    /// The names whose alias notice was printed (once per process).
    static let aliasNotices = Mutex<Set<String>>([])

    /// The profile an alias file names (`alias: NAME`), or nil for a profile.
    static func alias(in file: URL) throws -> String? {
        guard let data = FileManager.default.contents(atPath: file.path), let text = String(data: data, encoding: .utf8) else { return nil }
        guard case .map(let top, _)? = try? YAMLTree.parse(text, file: file.path) else { return nil }
        for (key, value, _) in top where key == "alias" {
            guard case .scalar(let target, let position) = value, !target.isEmpty,
                  target.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                throw ScenarioError(file: file.path, line: value.position?.line, column: value.position?.column, field: "alias", message: "expected the name of a profile in the same folder")
            }
            _ = position
            return target
        }
        return nil
    }

    /// The profile named `name` as ``load(_:root:)`` finds it, or nil when no file of that name exists anywhere it
    /// looks. A file that exists but does not load is an error naming it, never nil.
    public static func loadIfPresent(_ name: String, root: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)) throws -> CostProfile? {
        try find(name, root: root, depth: 0)
    }

    /// The folders a profile name is looked up in, in order.
    static func directories(root: URL) -> [URL] {
        var directories = [root.appendingPathComponent("Profiles", isDirectory: true)]
        if let path = ProcessInfo.processInfo.environment["AMBAR_PROFILE_PATH"] {
            directories += path.split(separator: ":").map { URL(fileURLWithPath: String($0), isDirectory: true) }
        }
        var ancestor = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            ancestor = ancestor.deletingLastPathComponent()
            directories.append(ancestor.appendingPathComponent("Profiles", isDirectory: true))
        }
        return directories
    }

    static func load(_ name: String, root: URL, depth: Int) throws -> CostProfile {
        if let profile = try find(name, root: root, depth: depth) { return profile }
        if name.hasSuffix(".yaml") || name.hasSuffix(".yml") || name.contains("/") {
            return try load(file: URL(fileURLWithPath: name, relativeTo: root).standardizedFileURL)
        }
        throw WorkbenchError(.badInput, "no cost profile \(name) in \(directories(root: root).map(\.path).joined(separator: ", ")) (run from the repository, set AMBAR_PROFILE_PATH, or give a .yaml file)")
    }

    /// The profile `name` stands for, or nil when its file does not exist.
    static func find(_ name: String, root: URL, depth: Int) throws -> CostProfile? {
        if name.hasSuffix(".yaml") || name.hasSuffix(".yml") || name.contains("/") {
            let file = URL(fileURLWithPath: name, relativeTo: root).standardizedFileURL
            return FileManager.default.fileExists(atPath: file.path) ? try load(file: file) : nil
        }
        guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw WorkbenchError(.badInput, "profile name \(name.debugDescription): use letters, digits, - and _, or give a .yaml file")
        }
        for directory in directories(root: root) {
            let file = directory.appendingPathComponent("\(name).yaml")
            guard FileManager.default.fileExists(atPath: file.path) else { continue }
            // A file of `alias: NAME` stands for another profile of the same folder, under its old name.
            if let target = try alias(in: file) {
                guard target != name, depth < 4 else { throw WorkbenchError(.badInput, "cost profile \(file.path): its alias \(target) leads back to itself") }
                aliasNotices.withLock { seen in
                    if seen.insert(name).inserted {
                        FileHandle.standardError.write(Data("note: profile \(name) is now \(target) (\(file.path))\n".utf8))
                    }
                }
                var profile = try load(target, root: root, depth: depth + 1)
                profile.name = target
                return profile
            }
            return try load(file: file)
        }
        return nil
    }

    /// Reads and checks a profile file: every operation named once, each cost a finite number of nanoseconds
    /// from 0 to one second. Errors name the file, line and field.
    public static func load(file: URL) throws -> CostProfile {
        guard let data = FileManager.default.contents(atPath: file.path) else {
            throw WorkbenchError(.badInput, "cannot read cost profile \(file.path)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ScenarioError(file: file.path, field: "", message: "not UTF-8 text")
        }
        return try parse(text, file: file.path, name: file.deletingPathExtension().lastPathComponent)
    }

    static func parse(_ text: String, file: String, name: String) throws -> CostProfile {
        let tree = try YAMLTree.parse(text, file: file)
        func fail(_ node: YAMLTree?, _ field: String, _ message: String) -> ScenarioError {
            ScenarioError(file: file, line: node?.position?.line, column: node?.position?.column, field: field, message: message)
        }
        guard case .map(let top, _) = tree else { throw fail(tree, "", "a profile is a map (description, fittedTo, device, writtenBy, costs)") }
        var profile = CostProfile(name: name, description: "", fittedTo: "", nanos: [UInt64](repeating: 0, count: CostedOperation.allCases.count),
                                  sources: [:], estimated: [])
        var seen: Set<String> = []
        for (key, value, position) in top {
            switch key {
            case "description", "fittedTo", "device", "writtenBy", "evidence":
                guard case .scalar(let s, _) = value else { throw fail(value, key, "expected text") }
                switch key {
                case "description": profile.description = s
                case "fittedTo": profile.fittedTo = s
                case "device": profile.device = s
                case "writtenBy": profile.writtenBy = s
                default: profile.evidence = s
                }
            case "costs":
                guard case .map(let entries, _) = value else { throw fail(value, key, "expected a map of operation: { ns, source, estimated }") }
                for (opName, spec, opPosition) in entries {
                    let field = "costs.\(opName)"
                    guard let op = CostedOperation(name: opName) else {
                        let node = YAMLTree.scalar(opName, opPosition)
                        throw fail(node, field, "unknown operation; expected one of \(CostedOperation.allCases.map(\.name).joined(separator: ", "))")
                    }
                    guard seen.insert(opName).inserted else { throw fail(.scalar(opName, opPosition), field, "named twice") }
                    guard case .map(let parts, _) = spec else { throw fail(spec, field, "expected { ns: NUMBER, source: TEXT, estimated: BOOL }") }
                    var ns: Double?
                    for (part, partValue, _) in parts {
                        guard case .scalar(let s, _) = partValue else { throw fail(partValue, "\(field).\(part)", "expected a scalar") }
                        switch part {
                        case "ns":
                            guard let v = Double(s), v.isFinite, v >= 0, v <= maximumNanos else {
                                throw fail(partValue, "\(field).ns", "expected a finite number of nanoseconds from 0 to \(Int(maximumNanos)), got \(s.debugDescription)")
                            }
                            ns = v
                        case "source": profile.sources[opName] = s
                        case "estimated":
                            guard let b = Bool(s) else { throw fail(partValue, "\(field).estimated", "expected true or false") }
                            if b { profile.estimated.append(opName) }
                        default: throw fail(partValue, "\(field).\(part)", "unknown key; expected ns, source or estimated")
                        }
                    }
                    guard let ns else { throw fail(spec, "\(field).ns", "missing") }
                    profile.nanos[op.rawValue] = UInt64(ns.rounded())
                }
            default:
                throw fail(.scalar(key, position), key, "unknown key; expected description, device, writtenBy, fittedTo, evidence or costs")
            }
        }
        let missing = CostedOperation.allCases.map(\.name).filter { !seen.contains($0) }
        guard missing.isEmpty else { throw fail(tree, "costs", "no cost for \(missing.joined(separator: ", ")) (every operation needs one; 0 is allowed)") }
        return profile
    }
}

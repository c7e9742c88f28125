import Foundation
import ObjectGraph

extension EvidenceFit {
    /// A profile file written by the fit: its name and text.
    public struct ProfileFile: Sendable {
        public var name: String
        public var text: String
        public var profile: CostProfile
    }

    /// The device's name and OS as its `fit` entries give them.
    func deviceLabel(_ device: String) -> String {
        guard let e = entries.first(where: { $0.device == device && $0.role == .fit }) ?? entries.first(where: { $0.device == device }) else { return device }
        return "\(e.deviceName), \(e.os)"
    }

    static func quoted(_ s: String) -> String { ProfileText.quoted(s) }

    /// An operation's cost in a written profile: `value` rounded, refused (naming the profile and the
    /// operation) unless it is a finite number of nanoseconds from 0 to ``CostProfile/maximumNanos``, what a
    /// profile file may hold.
    static func nanos(_ op: CostedOperation, _ value: Double, profile: String, how: String) throws -> UInt64 {
        let ns = value.rounded()
        guard ns.isFinite, ns >= 0, ns <= CostProfile.maximumNanos else {
            throw WorkbenchError(.badInput, "profile \(profile): \(op.name) would cost \(ns) ns (\(how)): a cost is a finite number of nanoseconds from 0 to \(Int(CostProfile.maximumNanos)); no profile written")
        }
        return UInt64(ns)
    }

    /// One line of a profile: `  op: { ns: N, estimated: B, source: "…" }`, aligned as the shipped files are.
    static func costLine(_ op: CostedOperation, ns: UInt64, estimated: Bool, source: String) -> String {
        let name = (op.name + ":").padding(toLength: 27, withPad: " ", startingAt: 0)
        let value = "\(ns),".padding(toLength: 9, withPad: " ", startingAt: 0)
        return "  \(name){ ns: \(value) estimated: \(estimated), source: \(quoted(source)) }\n"
    }

    /// How an undetermined parameter got its factor.
    func factorText(_ fit: DeviceFit, _ g: Int) -> String {
        (fit.assigned.indices.contains(g) ? fit.assigned[g] : nil) ?? "the geometric mean of this device's determined factors, \(String(format: "%.4f", fit.deviceFactor))"
    }

    /// The summary a profile carries of the evidence behind it (shown in every report that uses the profile).
    func evidenceSummary(_ fit: DeviceFit) -> String {
        let missing = plan.parameters.indices.filter { fit.undetermined[$0] != nil }.map { plan.parameters[$0].name }
        return "\(fit.determinedCount) of \(plan.parameters.count) parameters determined by \(fit.points.count) published figures (\(fit.entries.count) entries); relative residual \(String(format: "%.3f", fit.relativeResidual)); "
            + (missing.isEmpty ? "every parameter determined" : "not determined: " + missing.map { name in
                let g = plan.parameters.firstIndex { $0.name == name }!
                return "\(name), \(factorText(fit, g))"
            }.joined(separator: "; "))
    }

    /// The profile of a device fit, in the profile format (Profiles/README.md "Writing a profile").
    public func profileFile(_ fit: DeviceFit) throws -> ProfileFile {
        let label = deviceLabel(fit.device)
        let comment = ProfileText.oneLine(label)
        let entryList = fit.entries.joined(separator: ", ")
        var text = "# Cost profile: \(comment), written by `ambar-bench fit` from Profiles/evidence/ (Profiles/README.md \"How the fit works\").\n"
        text += "# Do not edit: change the evidence or Profiles/\(plan.estimates).yaml and run `ambar-bench fit` again.\n"
        text += "# Each figure is its estimate (Profiles/\(plan.estimates).yaml) times its parameter's factor:\n"
        for (g, p) in plan.parameters.enumerated() {
            let how = fit.undetermined[g].map { "not determined (\($0)): \(factorText(fit, g))" } ?? "fitted"
            text += "#   \(ProfileText.oneLine(p.name)) × \(String(format: "%.4f", fit.scales[g])) (\(ProfileText.oneLine(how)))\n"
        }
        text += "description: \(Self.quoted("\(label): Core Data's costs fitted to published measurements on that device."))\n"
        text += "device: \(Self.quoted(label))\n"
        text += "writtenBy: \"ambar-bench fit\"\n"
        text += "fittedTo: \(Self.quoted("\(fit.points.count) published figures on \(label): \(entryList) (Profiles/evidence/)"))\n"
        text += "evidence: \(Self.quoted(evidenceSummary(fit)))\n"
        text += "costs:\n"
        var profile = estimates
        profile.name = fit.device
        for op in CostedOperation.allCases {
            let g = plan.parameter(of: op)
            let ns = try Self.nanos(op, Double(estimates.nanos[op.rawValue]) * fit.scales[g], profile: fit.device,
                                    how: "the estimate \(estimates.nanos[op.rawValue]) ns × \(plan.parameters[g].name)'s factor \(fit.scales[g])")
            profile.nanos[op.rawValue] = ns
            let estimate = "the estimate \(estimates.nanos[op.rawValue]) ns (\(estimates.sources[op.name] ?? "no source"))"
            let source = fit.undetermined[g] == nil
                ? "\(plan.parameters[g].name) × \(String(format: "%.4f", fit.scales[g])), fitted to \(fit.points.count) figures on \(label); of \(estimate)"
                : "NOT determined on \(label) (\(plan.parameters[g].name): \(fit.undetermined[g]!)): \(factorText(fit, g)), × \(String(format: "%.4f", fit.scales[g])) of \(estimate)"
            text += Self.costLine(op, ns: ns, estimated: fit.undetermined[g] != nil, source: source)
        }
        return ProfileFile(name: fit.device, text: text, profile: profile)
    }

    /// A derived profile: `from`'s fit times the device factor.
    public func profileFile(_ d: EvidencePlan.Derived, from fit: DeviceFit) throws -> ProfileFile {
        let label = deviceLabel(fit.device)
        var text = "# Cost profile: \(ProfileText.oneLine(d.description))\n"
        text += "# Written by `ambar-bench fit` (Profiles/README.md \"How the fit works\", \"The default profile\"); do not edit: change\n"
        text += "# Profiles/evidence/fit.yaml or the evidence and run it again. Every figure is \(fit.device)'s times \(d.factor)\n"
        text += "# (range \(d.low)-\(d.high)): \(ProfileText.oneLine(d.source))\n"
        text += "description: \(Self.quoted(d.description))\n"
        text += "device: \(Self.quoted("derived from \(label) by a device factor of \(d.factor) (range \(d.low)-\(d.high))"))\n"
        text += "writtenBy: \"ambar-bench fit\"\n"
        text += "fittedTo: \(Self.quoted("nothing on this device: \(fit.device)'s fit to \(fit.points.count) published figures (\(fit.entries.joined(separator: ", "))), times a published device factor"))\n"
        text += "evidence: \(Self.quoted("derived: \(fit.device)'s \(evidenceSummary(fit)); times \(d.factor) (range \(d.low)-\(d.high)) from \(d.source)"))\n"
        text += "costs:\n"
        var profile = estimates
        profile.name = d.name
        for op in CostedOperation.allCases {
            let g = plan.parameter(of: op)
            let base = Double(estimates.nanos[op.rawValue]) * fit.scales[g]
            let ns = try Self.nanos(op, base * d.factor, profile: d.name,
                                    how: "the estimate \(estimates.nanos[op.rawValue]) ns × \(plan.parameters[g].name)'s factor \(fit.scales[g]) on \(fit.device) × \(d.factor)")
            profile.nanos[op.rawValue] = ns
            let source = "\(fit.device)'s \(Int(base.rounded())) ns × \(d.factor) (device factor; \(plan.parameters[g].name) × \(String(format: "%.4f", fit.scales[g]))\(fit.undetermined[g] == nil ? " fitted" : " NOT determined there") of the estimate \(estimates.nanos[op.rawValue]) ns)"
            text += Self.costLine(op, ns: ns, estimated: true, source: source)
        }
        return ProfileFile(name: d.name, text: text, profile: profile)
    }

    /// Every profile the fit writes: one per device with `fit` entries, then the derived ones.
    public func profileFiles(_ fits: [DeviceFit]) throws -> [ProfileFile] {
        var files = try fits.map(profileFile)
        for d in plan.derived {
            guard let fit = fits.first(where: { $0.device == d.from }) else {
                throw (d.fromAt ?? EvidencePlace(field: "derived")).fail(plan.file, "\(d.name) is derived from \(d.from), which no fit entry measures")
            }
            files.append(try profileFile(d, from: fit))
        }
        return files
    }

    /// Writes `files` to `folder` as `<name>.yaml`, all or none: every text is first read back as a profile (it
    /// must parse, and give the costs it was made with), then each is written to a temporary file beside its
    /// target, and only when all are written are they moved into place. A failure writes nothing and names the
    /// profile. Returns the files written, in order.
    public static func write(_ files: [ProfileFile], to folder: URL) throws -> [URL] {
        var names: Set<String> = []
        for file in files {
            guard names.insert(file.name).inserted else { throw WorkbenchError(.badInput, "profile \(file.name) is written twice by one fit") }
            let url = folder.appendingPathComponent("\(file.name).yaml")
            let read: CostProfile
            do { read = try CostProfile.parse(file.text, file: url.path, name: file.name) } catch {
                throw WorkbenchError(.badInput, "profile \(file.name): the text the fit made does not read back (\(error)); no profile written")
            }
            if let op = CostedOperation.allCases.first(where: { read.nanos[$0.rawValue] != file.profile.nanos[$0.rawValue] }) {
                throw WorkbenchError(.badInput, "profile \(file.name): \(op.name) reads back as \(read.nanos[op.rawValue]) ns, not the \(file.profile.nanos[op.rawValue]) ns fitted; no profile written")
            }
        }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var staged: [(temporary: URL, target: URL)] = []
        do {
            for file in files {
                let target = folder.appendingPathComponent("\(file.name).yaml")
                let temporary = folder.appendingPathComponent(".\(file.name).yaml.\(UUID().uuidString).tmp")
                staged.append((temporary, target))
                try Data(file.text.utf8).write(to: temporary)
            }
        } catch {
            for s in staged { try? FileManager.default.removeItem(at: s.temporary) }
            throw WorkbenchError(.badInput, "cannot write the profiles to \(folder.path) (\(error.localizedDescription)); no profile written")
        }
        for s in staged {
            guard rename(s.temporary.path, s.target.path) == 0 else {
                let reason = String(cString: strerror(errno))
                for rest in staged { try? FileManager.default.removeItem(at: rest.temporary) }
                throw WorkbenchError(.badInput, "cannot move \(s.temporary.path) to \(s.target.path) (\(reason))")
            }
        }
        return staged.map(\.target)
    }
}

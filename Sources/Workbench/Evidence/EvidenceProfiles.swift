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

    static func quoted(_ s: String) -> String { "\"" + s.replacingOccurrences(of: "\"", with: "'") + "\"" }

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
    public func profileFile(_ fit: DeviceFit) -> ProfileFile {
        let label = deviceLabel(fit.device)
        let entryList = fit.entries.joined(separator: ", ")
        var text = "# Cost profile: \(label), written by `ambar-bench fit` from Profiles/evidence/ (Profiles/README.md \"How the fit works\").\n"
        text += "# Do not edit: change the evidence or Profiles/\(plan.estimates).yaml and run `ambar-bench fit` again.\n"
        text += "# Each figure is its estimate (Profiles/\(plan.estimates).yaml) times its parameter's factor:\n"
        for (g, p) in plan.parameters.enumerated() {
            let how = fit.undetermined[g].map { "not determined (\($0)): \(factorText(fit, g))" } ?? "fitted"
            text += "#   \(p.name) × \(String(format: "%.4f", fit.scales[g])) (\(how))\n"
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
            let ns = UInt64((Double(estimates.nanos[op.rawValue]) * fit.scales[g]).rounded())
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
    public func profileFile(_ d: EvidencePlan.Derived, from fit: DeviceFit) -> ProfileFile {
        let label = deviceLabel(fit.device)
        var text = "# Cost profile: \(d.description)\n"
        text += "# Written by `ambar-bench fit` (Profiles/README.md \"How the fit works\", \"The default profile\"); do not edit: change\n"
        text += "# Profiles/evidence/fit.yaml or the evidence and run it again. Every figure is \(fit.device)'s times \(d.factor)\n"
        text += "# (range \(d.low)-\(d.high)): \(d.source)\n"
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
            let ns = UInt64((base * d.factor).rounded())
            profile.nanos[op.rawValue] = ns
            let source = "\(fit.device)'s \(Int(base.rounded())) ns × \(d.factor) (device factor; \(plan.parameters[g].name) × \(String(format: "%.4f", fit.scales[g]))\(fit.undetermined[g] == nil ? " fitted" : " NOT determined there") of the estimate \(estimates.nanos[op.rawValue]) ns)"
            text += Self.costLine(op, ns: ns, estimated: true, source: source)
        }
        return ProfileFile(name: d.name, text: text, profile: profile)
    }

    /// Every profile the fit writes: one per device with `fit` entries, then the derived ones.
    public func profileFiles(_ fits: [DeviceFit]) throws -> [ProfileFile] {
        var files = fits.map(profileFile)
        for d in plan.derived {
            guard let fit = fits.first(where: { $0.device == d.from }) else {
                throw WorkbenchError(.badInput, "Profiles/evidence/fit.yaml: \(d.name) is derived from \(d.from), which no fit entry measures")
            }
            files.append(profileFile(d, from: fit))
        }
        return files
    }
}

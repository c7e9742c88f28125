// The model file format (``ModelFile``, ``AttributeType``, ``DeleteRule``) is ModelSchema's, a Foundation-only
// module the operation trace shares so that a trace's model and a model file are one type. ObjectGraph re-exports
// it: an app that imports ObjectGraph writes `ModelFile` and `AttributeType` as part of this module's API.
@_exported import ModelSchema

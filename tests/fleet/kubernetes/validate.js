// Validates Kubernetes manifests against the Kubernetes API schemas offline with kubernetes-models (its JSON schemas
// per apiVersion/kind), custom resources against their CRD's openAPIV3Schema copied into crds/ (ajv, which
// kubernetes-models brings), and checks the node-problem-detector custom-plugin config inside a ConfigMap.
//   node validate.js NODE_MODULES_DIR FILE...
// Prints one JSON object: {"objects": N, "kinds": [...], "problems": [...], "pods": [...], "objects_json": [...]},
// where each pod template (DaemonSet) is summarized: hostPID, supplementalGroups, its containers' image, limits,
// capabilities, preStop and env, and each mount with its hostPath and readOnly.
'use strict';
const fs = require('fs');
const path = require('path');

const modules = process.argv[2];
const YAML = require(path.join(modules, 'yaml'));

/// The kubernetes-models module for an apiVersion: "v1" -> kubernetes-models/v1, "apps/v1" -> kubernetes-models/apps/v1.
function modelClass(apiVersion, kind) {
  const group = apiVersion.includes('/') ? apiVersion : apiVersion;
  const module = require(path.join(modules, 'kubernetes-models', group));
  return module[kind];
}

/// node-problem-detector's custom plugin config (pkg/custompluginmonitor/types): the fields NPD reads.
function checkNpdPlugin(name, text, problems) {
  let config;
  try {
    config = JSON.parse(text);
  } catch (e) {
    problems.push(`${name}: not JSON: ${e.message}`);
    return;
  }
  if (config.plugin !== 'custom') problems.push(`${name}: plugin must be "custom"`);
  const pc = config.pluginConfig || {};
  if (!(pc.max_output_length <= 80)) problems.push(`${name}: max_output_length must be at most 80`);
  const conditions = new Set((config.conditions || []).map((c) => c.type));
  for (const rule of config.rules || []) {
    if (!['temporary', 'permanent'].includes(rule.type)) problems.push(`${name}: rule type ${rule.type}`);
    if (rule.type === 'permanent' && !conditions.has(rule.condition))
      problems.push(`${name}: rule condition ${rule.condition} is not declared in conditions`);
    if (!rule.reason || !rule.path) problems.push(`${name}: a rule needs reason and path`);
    if (!(rule.args || []).includes('--oneline')) problems.push(`${name}: the rule must run doctor --oneline`);
  }
  if ((config.rules || []).length === 0) problems.push(`${name}: no rules`);
}

/// A custom resource against the openAPIV3Schema of its CRD in crds/<group>_<version>_<Kind>.json, or null when
/// there is none.
function crdProblems(object) {
  const file = path.join(__dirname, 'crds', `${object.apiVersion.replace('/', '_')}_${object.kind}.json`);
  if (!fs.existsSync(file)) return null;
  const Ajv = require(path.join(modules, 'ajv'));
  const schema = JSON.parse(fs.readFileSync(file, 'utf8'));
  delete schema.$comment;
  const ajv = new Ajv({ strict: false, allErrors: true, logger: false });
  const validate = ajv.compile(schema);
  if (validate(object)) return [];
  return validate.errors.map((e) => `${e.instancePath} ${e.message}`);
}

/// What the test asserts about a workload's pod template.
function podSummary(object) {
  const spec = object.spec.template.spec;
  const hostPaths = Object.fromEntries((spec.volumes || []).map((v) => [v.name, v.hostPath ? v.hostPath.path : null]));
  return {
    name: object.metadata.name,
    hostPID: spec.hostPID === true,
    supplementalGroups: (spec.securityContext && spec.securityContext.supplementalGroups) || [],
    containers: spec.containers.map((c) => ({
      name: c.name,
      image: c.image,
      command: [...(c.command || []), ...(c.args || [])].join(' '),
      preStop: (c.lifecycle && c.lifecycle.preStop && c.lifecycle.preStop.exec && c.lifecycle.preStop.exec.command) || [],
      env: Object.fromEntries((c.env || []).map((e) => [e.name, e.value])),
      limits: (c.resources && c.resources.limits) || {},
      capabilitiesAdded: (c.securityContext && c.securityContext.capabilities && c.securityContext.capabilities.add) || [],
      readOnlyRootFilesystem: !!(c.securityContext && c.securityContext.readOnlyRootFilesystem),
      privileged: !!(c.securityContext && c.securityContext.privileged),
      mounts: (c.volumeMounts || []).map((m) => ({
        mountPath: m.mountPath,
        hostPath: hostPaths[m.name] || null,
        readOnly: m.readOnly === true,
      })),
    })),
  };
}

/// A Kubeflow MPIJob (kubeflow.org/v2beta1) has no schema here; each of its replicas' pod templates is a core
/// PodTemplateSpec (kubeflow/mpi-operator @ 013fa15b22a60180c99f5111a904b60099828f89 pkg/apis/kubeflow/v2beta1/types.go:
/// MPIReplicaSpecs map[MPIReplicaType]*common.ReplicaSpec, kubeflow/common ReplicaSpec.Template), validated as a v1
/// PodTemplate named <job>-<replica>. Other objects are validated as they are.
function objectsToValidate(object) {
  if (object.apiVersion !== 'kubeflow.org/v2beta1' || object.kind !== 'MPIJob') return [object];
  const specs = (object.spec && object.spec.mpiReplicaSpecs) || {};
  return Object.entries(specs).map(([replica, spec]) => ({
    apiVersion: 'v1',
    kind: 'PodTemplate',
    metadata: { name: `${object.metadata.name}-${replica.toLowerCase()}` },
    template: spec.template,
  }));
}

const result = { objects: 0, kinds: [], problems: [], pods: [], custom: [] };

function validateObject(file, object) {
  result.objects++;
  result.kinds.push(`${object.apiVersion}/${object.kind}`);
  const custom = crdProblems(object);
  if (custom !== null) {
    for (const problem of custom) result.problems.push(`${file}: ${object.kind} ${object.metadata.name}: ${problem}`);
    result.custom.push(object);
    return;
  }
  let Model;
  try {
    Model = modelClass(object.apiVersion, object.kind);
  } catch (e) {
    Model = undefined;
  }
  if (!Model) {
    result.problems.push(`${file}: no schema for ${object.apiVersion} ${object.kind}`);
    return;
  }
  try {
    new Model(object).validate();
  } catch (e) {
    result.problems.push(`${file}: ${object.kind} ${object.metadata && object.metadata.name}: ${e.message}`);
  }
  if (object.kind === 'DaemonSet') result.pods.push(podSummary(object));
  if (object.kind === 'ConfigMap') {
    for (const [key, text] of Object.entries(object.data || {}))
      if (key.endsWith('.json')) checkNpdPlugin(`${file}: ${key}`, text, result.problems);
  }
}

for (const file of process.argv.slice(3)) {
  for (const doc of YAML.parseAllDocuments(fs.readFileSync(file, 'utf8'))) {
    if (doc.errors.length) {
      result.problems.push(`${file}: YAML: ${doc.errors[0].message}`);
      continue;
    }
    const parsed = doc.toJS();
    if (parsed === null) continue;
    for (const object of objectsToValidate(parsed)) validateObject(file, object);
  }
}
process.stdout.write(JSON.stringify(result) + '\n');

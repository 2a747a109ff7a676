package drift

// Manifests as Git renders them. The Deployment omits much that the
// apiserver defaults (strategy, revisionHistoryLimit, terminationMessage*,
// dnsPolicy, port protocol), and the Service omits clusterIP and type.
const (
	deploymentYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: ghcr.io/example/web:1.0.0
        ports:
        - containerPort: 8080
        env:
        - {name: MODE, value: prod}
      - name: sidecar
        image: ghcr.io/example/proxy:2.0.0
`
	// autoscaledYAML leaves replicas to an HPA, as Git should.
	autoscaledYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: scaled
spec:
  selector:
    matchLabels: {app: scaled}
  template:
    metadata:
      labels: {app: scaled}
    spec:
      containers:
      - name: app
        image: ghcr.io/example/web:1.0.0
`
	serviceYAML = `
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
`
	configMapYAML = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  a: "1"
  b: "2"
`
	secretYAML = `
apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  password: hunter2
`
)

// roleYAML is a Role, which Flux does not normalise (its rules once lost
// to a serialisation bug, fluxcd/kustomize-controller#1041).
const roleYAML = `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: reader
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list]
`

package profile

// Template is the commented starting file `ain profile init` writes.
const Template = `# ain fabric profile: how THIS cluster does RDMA. Recipes stay portable; this file does not.
# Fill it in from the nodes (ibstat, ibv_devinfo -v) and the NVIDIA Network Operator's
# NicClusterPolicy, then check it with: ain profile show --profile THIS_FILE
apiVersion: ain.dev/v1alpha1
kind: FabricProfile
metadata:
  name: my-cluster
spec:
  # ib: InfiniBand (ibstat "Link layer: InfiniBand"); roce: RDMA over Converged Ethernet
  # ("Link layer: Ethernet"); socket: TCP only (NCCL_IB_DISABLE=1), the baseline to compare against.
  fabric: ib
  # The GPU resource the NVIDIA device plugin advertises.
  gpuResource: nvidia.com/gpu
  # The RDMA device-plugin resource: NicClusterPolicy spec.rdmaSharedDevicePlugin resourceName,
  # prefixed with "rdma/" (shared device plugin), or an SR-IOV resource such as nvidia.com/sriov_rdma.
  rdma:
    resource: rdma/rdma_shared_device_a
    count: 1
  # Multus NetworkAttachmentDefinitions for the RDMA interfaces (name, ns/name or name@ifname).
  # Leave empty when the RDMA NIC is the pod's primary network (host-device/macvlan not used).
  networks: []
  # The HCAs NCCL may use, from ibstat / ibv_devinfo (CA 'mlx5_0', port 1 -> mlx5_0:1). Leave empty
  # to let NCCL discover them: a wrong explicit list silently drops NCCL to TCP sockets.
  hcas: []
  # RoCE only: the GID index of the RoCE v2 IPv4 entry (ibv_devinfo -v "GID[  3]: ..., RoCE v2"),
  # or auto (NCCL >= 2.21 picks it). ain doctor ib-ports prints it.
  gidIndex: auto
  # RoCE only: the subnet of the RoCE network (the Multus network's IPAM range). NCCL then picks on
  # each device the RoCE v2 GID whose address is in it: the pod's own interface (net1), never a
  # host NIC's GID, which is outside the pod's network namespace (QP setup fails with errno 19).
  # addrRange: 192.168.100.0/24
  # RoCE only: traffic class for lossless RDMA traffic (e.g. 106 = DSCP 26 << 2 | ECN).
  # trafficClass: 106
  # The interface for NCCL bootstrap and socket traffic (NCCL_SOCKET_IFNAME), e.g. eth0 or net1.
  # socketIfname: eth0
  # GPUDirect RDMA distance (NCCL_NET_GDR_LEVEL: LOC, PIX, PXB, PHB, SYS); empty lets NCCL decide.
  # gdrLevel: PHB
  # The rate of one NIC port (ibstat "Rate: 400" -> 400Gb). Bench verdicts compare busbw with it.
  lineRate: 400Gb
  # Where GPU pods may run.
  nodeSelector: {}
  #   nvidia.com/gpu.present: "true"
  tolerations: []
  #   - key: nvidia.com/gpu
  #     operator: Exists
  #     effect: NoSchedule
  # Train only on nodes a passing nccl-tests run measured (course 12.1.5: validate first): ain train
  # then needs a valid, recent enough result of ain bench allreduce --out RESULTS and pins its ranks
  # to the nodes it measured (--require-bench DIR does the same for one run).
  # requireBench:
  #   results: ain-results
  #   maxAge: 24h
`

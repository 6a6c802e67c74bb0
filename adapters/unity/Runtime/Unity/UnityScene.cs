using System.Collections.Generic;
using UnityEngine;
using UnityEngine.SceneManagement;

namespace Crosscode.Cappy.Unity
{
    /// <summary>
    /// The loaded scenes for inspect and the capture config's events: their
    /// root GameObjects, each with its transform, children and components
    /// (whose public fields inspect reads). Engine objects in those fields
    /// are written by name, never walked into.
    /// </summary>
    public sealed class UnityScene : ISceneGraph, IValueConverter
    {
        int generation;

        /// <summary>A view of the scenes; a scene loaded or unloaded is a new generation.</summary>
        public UnityScene()
        {
            SceneManager.sceneLoaded += delegate (Scene s, LoadSceneMode m) { generation++; };
            SceneManager.sceneUnloaded += delegate (Scene s) { generation++; };
        }

        /// <inheritdoc/>
        public int Generation { get { return generation; } }

        /// <inheritdoc/>
        public string SceneName
        {
            get
            {
                var names = new List<string>();
                for (int i = 0; i < SceneManager.sceneCount; i++)
                {
                    var s = SceneManager.GetSceneAt(i);
                    if (s.isLoaded) names.Add(s.name);
                }
                return string.Join(", ", names.ToArray());
            }
        }

        /// <inheritdoc/>
        public IList<ISceneNode> Roots()
        {
            var roots = new List<ISceneNode>();
            for (int i = 0; i < SceneManager.sceneCount; i++)
            {
                var s = SceneManager.GetSceneAt(i);
                if (!s.isLoaded) continue;
                foreach (var go in s.GetRootGameObjects())
                    if ((go.hideFlags & HideFlags.HideInHierarchy) == 0) roots.Add(new Node(go));
            }
            return roots;
        }

        /// <inheritdoc/>
        public object Convert(object v)
        {
            var o = v as Object;
            if (ReferenceEquals(o, null)) return v;
            if (o == null) return "(destroyed " + v.GetType().Name + ")";
            var go = o as GameObject;
            if (go != null) return "(GameObject " + Path(go.transform) + ")";
            var c = o as Component;
            if (c != null) return "(" + c.GetType().Name + " of " + Path(c.transform) + ")";
            return "(" + o.GetType().Name + " " + o.name + ")";
        }

        static string Path(Transform t)
        {
            string p = t.name;
            for (var up = t.parent; up != null; up = up.parent) p = up.name + "/" + p;
            return p;
        }

        sealed class Node : ISceneNode
        {
            readonly GameObject go;
            public Node(GameObject go) { this.go = go; }
            public string Name { get { return go.name; } }

            public IList<ISceneNode> Children()
            {
                var t = go.transform;
                var kids = new List<ISceneNode>(t.childCount);
                for (int i = 0; i < t.childCount; i++) kids.Add(new Node(t.GetChild(i).gameObject));
                return kids;
            }

            public IDictionary<string, object> Describe()
            {
                var t = go.transform;
                return new Dictionary<string, object>
                {
                    { "active", go.activeSelf },
                    { "tag", go.tag },
                    { "layer", go.layer },
                    { "position", t.position },
                    { "localPosition", t.localPosition },
                    { "rotation", t.eulerAngles },
                    { "scale", t.localScale },
                };
            }

            public IList<object> Components()
            {
                var list = new List<object>();
                foreach (var c in go.GetComponents<Component>())
                    if (c != null && !(c is Transform)) list.Add(c);
                return list;
            }

            public string ComponentName(object c) { return c.GetType().Name; }
        }
    }
}
